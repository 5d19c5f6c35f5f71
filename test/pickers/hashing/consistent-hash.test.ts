import { describe, expect, it } from 'vitest';
import { ConfigError, MissingKeyError } from '../../../src/base/errors.js';
import type { Picker } from '../../../src/base/types.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { roundRobin } from '../../../src/pickers/round-robin.js';
import { keys, mapping, request, shards } from './helpers.js';

const ALGORITHMS = ['ring', 'maglev', 'rendezvous', 'jump'] as const;

function configError(fn: () => unknown, field: string): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  const error = caught as ConfigError;
  expect(error.field).toBe(field);
  expect(error.message).toContain(field);
  return error;
}

describe('consistentHash() options', () => {
  it('defaults to a keyed ring named consistent-hash:ring with no spills', () => {
    const picker = consistentHash();
    expect(picker.name).toBe('consistent-hash:ring');
    expect(picker.keyed).toBe(true);
    expect(picker.spills).toBe(0);
  });

  it.each(ALGORITHMS)('names the %s picker after its algorithm', (algorithm) => {
    expect(consistentHash({ algorithm }).name).toBe(`consistent-hash:${algorithm}`);
  });

  it.each([0, -1, 1.5, Number.NaN, '160', 10_001, 1e9])('rejects vnodes %j', (vnodes) => {
    configError(() => consistentHash({ vnodes: vnodes as number }), 'consistentHash.vnodes');
  });

  it.each([65536, 100, 1, 2.5, 2147483647, 4294967311, Number.POSITIVE_INFINITY, '65537'])(
    'rejects a Maglev tableSize of %j (not a prime integer from 2 to 10 000 019)',
    (tableSize) => {
      const error = configError(
        () => consistentHash({ algorithm: 'maglev', tableSize: tableSize as number }),
        'consistentHash.tableSize',
      );
      expect(error.message).toContain('prime');
    },
  );

  it('accepts a prime Maglev table below 100 slots per shard; fewer slots than shards is refused at rebuild, keeping the old table', () => {
    const picker = consistentHash({ algorithm: 'maglev', tableSize: 13 });
    const twelve = shards(12);
    picker.rebuild(twelve);
    const before = mapping(picker, twelve, keys(100));
    expect(new Set(before).size).toBe(12);
    const error = configError(() => picker.rebuild(shards(14)), 'consistentHash.tableSize');
    expect(error.message).toContain('14 shards do not fit in 13 slots');
    expect(error.message).toContain('resize(');
    expect(mapping(picker, twelve, keys(100))).toEqual(before);
    expect(picker.describe().tableSize).toBe(13);
  });

  it.each([0.99, 0, -1, Number.POSITIVE_INFINITY, Number.NaN, '1.25'])(
    'rejects boundedLoad %j',
    (boundedLoad) => {
      configError(
        () => consistentHash({ boundedLoad: boundedLoad as number }),
        'consistentHash.boundedLoad',
      );
    },
  );

  it('rejects an unknown algorithm, an unknown option and options for another algorithm', () => {
    configError(
      () => consistentHash({ algorithm: 'ketama' as 'ring' }),
      'consistentHash.algorithm',
    );
    configError(
      () => consistentHash({ vnode: 100 } as Parameters<typeof consistentHash>[0]),
      'consistentHash.vnode',
    );
    configError(
      () => consistentHash({ algorithm: 'maglev', vnodes: 100 }),
      'consistentHash.vnodes',
    );
    configError(() => consistentHash({ tableSize: 65537 }), 'consistentHash.tableSize');
    configError(() => consistentHash(null as never), 'consistentHash options');
  });

  it('rejects a hash that is not a function and a fallback without pick()', () => {
    configError(() => consistentHash({ hash: 42 as never }), 'consistentHash.hash');
    configError(() => consistentHash({ fallback: {} as Picker }), 'consistentHash.fallback');
    configError(() => consistentHash({ fallback: (() => 0) as never }), 'consistentHash.fallback');
    expect(() => consistentHash({ fallback: roundRobin as never })).toThrow(
      'got a function: call the maker, as in `roundRobin()`',
    );
  });

  it('rejects a custom hash whose output is not a 32-bit integer, which would stack every key on one point', () => {
    for (const bad of [() => Number.NaN, () => 0.5, () => '7', () => undefined, () => 2 ** 32]) {
      for (const algorithm of ['ring', 'maglev', 'rendezvous', 'jump'] as const) {
        expect(() => consistentHash({ algorithm, hash: bad as never })).toThrow(
          /`consistentHash\.hash` must return a 32-bit integer \(a uint32\) for every key, and for the key 'shardwise' did not, got /,
        );
      }
    }
    // Bytes too: a hash that handles strings only.
    const stringsOnly = (key: string | Uint8Array) =>
      typeof key === 'string' ? key.length : Number.NaN;
    configError(() => consistentHash({ hash: stringsOnly }), 'consistentHash.hash');
    // Signed 32-bit results are fine (they are read `>>> 0`), as are 0 and 2^32 − 1.
    for (const good of [
      () => -1,
      () => 0,
      () => 2 ** 32 - 1,
      (k: string | Uint8Array) => k.length | 0x80000000,
    ]) {
      expect(consistentHash({ hash: good }).name).toBe('consistent-hash:ring');
    }
  });

  it('rejects unequal weights under jump, at rebuild', () => {
    const picker = consistentHash({ algorithm: 'jump' });
    configError(() => picker.rebuild(shards(3, [1, 1, 2])), 'shards[2].weight');
    expect(() => picker.rebuild(shards(3, [2, 2, 2]))).not.toThrow();
  });
});

describe('consistentHash() keys', () => {
  it.each(ALGORITHMS)(
    '%s: a run without a key throws MissingKeyError naming the picker',
    (algorithm) => {
      const picker = consistentHash({ algorithm });
      const all = shards(4);
      picker.rebuild(all);
      expect(() => picker.pick(all, request(undefined))).toThrow(MissingKeyError);
      expect(() => picker.pick(all, request(undefined))).toThrow(`consistent-hash:${algorithm}`);
    },
  );

  it.each(ALGORITHMS)(
    '%s: with every shard offered and no bound, a shard whose in-flight is not below Infinity is passed over as if not offered; home() still names it',
    (algorithm) => {
      // The full-membership pick reads the key's first shard directly; it must agree with the
      // gate's walk, which the subset pick below takes.
      const picker = consistentHash({ algorithm });
      const all = shards(6);
      picker.rebuild(all);
      const ks = keys(300);
      const homes = mapping(picker, all, ks);
      const blocked = all[2]!;
      const rest = all.filter((s) => s !== blocked);
      const withoutIt = mapping(picker, rest, ks);
      const ownKeys = ks.filter((_, i) => homes[i] === blocked.id);
      expect(ownKeys.length).toBeGreaterThan(10);
      for (const figure of [Number.POSITIVE_INFINITY, Number.NaN]) {
        blocked.inFlight = figure;
        expect(mapping(picker, all, ks)).toEqual(withoutIt);
        for (const key of ownKeys) expect(picker.home(all, key)).toBe(blocked);
      }
      blocked.inFlight = 0;
      expect(mapping(picker, all, ks)).toEqual(homes);
    },
  );

  it('a run without a key goes to the fallback, which is rebuilt with the membership', () => {
    const rebuilt: number[] = [];
    const fallback: Picker = {
      name: 'last',
      pick: (offered) => offered[offered.length - 1],
      rebuild: (membership) => rebuilt.push(membership.length),
    };
    const picker = consistentHash({ fallback });
    const all = shards(5);
    picker.rebuild(all);
    expect(rebuilt).toEqual([5]);
    expect(picker.pick(all, request(undefined))?.id).toBe('shard-4');
    expect(picker.pick(all.slice(0, 2), request(undefined))?.id).toBe('shard-1');
  });

  it.each([42, null, {}, ['a'], new Uint16Array(2)])(
    'a key of the wrong type (%j) is a TypeError naming key',
    (key) => {
      const picker = consistentHash();
      const all = shards(3);
      picker.rebuild(all);
      expect(() => picker.pick(all, request(key as never))).toThrow(TypeError);
      expect(() => picker.pick(all, request(key as never))).toThrow('`key`');
    },
  );

  it.each(ALGORITHMS)('%s: a Uint8Array key maps like its UTF-8 string', (algorithm) => {
    const picker = consistentHash({ algorithm });
    const all = shards(20);
    picker.rebuild(all);
    const encoder = new TextEncoder();
    for (const key of ['a', 'user:1', 'ünï', '🌵', keys(1, 'x'.repeat(40))[0]!]) {
      expect(picker.pick(all, request(encoder.encode(key)))).toBe(picker.pick(all, request(key)));
    }
  });

  it.each(ALGORITHMS)('%s: pick before any rebuild builds from the offered shards', (algorithm) => {
    const lazy = consistentHash({ algorithm });
    const eager = consistentHash({ algorithm });
    const all = shards(12);
    eager.rebuild(all);
    expect(mapping(lazy, all, keys(500))).toEqual(mapping(eager, all, keys(500)));
  });

  it.each(ALGORITHMS)('%s: no shard offered → undefined', (algorithm) => {
    const picker = consistentHash({ algorithm });
    picker.rebuild(shards(4));
    expect(picker.pick([], request('k'))).toBeUndefined();
  });

  it('a custom hash is used for keys and placement, and stays deterministic', () => {
    let calls = 0;
    // FNV-1a over the key's UTF-8 bytes, seeded by xor: a deliberately different hash.
    const fnv = (key: string | Uint8Array, seed: number) => {
      calls++;
      const bytes = typeof key === 'string' ? new TextEncoder().encode(key) : key;
      let h = (0x811c9dc5 ^ seed) >>> 0;
      for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
      h ^= h >>> 15;
      h = Math.imul(h, 0x2c1b3c6d);
      return (h ^ (h >>> 12)) >>> 0;
    };
    for (const algorithm of ALGORITHMS) {
      const a = consistentHash({ algorithm, hash: fnv });
      const b = consistentHash({ algorithm, hash: fnv });
      const all = shards(10);
      a.rebuild(all);
      b.rebuild(all);
      calls = 0;
      const ks = keys(2000);
      const mapped = mapping(a, all, ks);
      expect(calls).toBeGreaterThanOrEqual(ks.length);
      expect(mapping(b, all, ks)).toEqual(mapped);
      expect(new Set(mapped).size).toBe(10);
      expect(mapped).not.toEqual(mapping(consistentHash({ algorithm }), all, ks));
    }
  });
});
