import { describe, expect, it } from 'vitest';
import { ConfigError, MissingKeyError } from '../../../src/base/errors.js';
import { createRandom } from '../../../src/base/random.js';
import type { Picker, ShardState } from '../../../src/base/types.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { keys, request, shards, type TestShard } from './helpers.js';

const ALGORITHMS = ['ring', 'maglev', 'rendezvous', 'jump'] as const;

function configError(fn: () => unknown, field: string): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  expect((caught as ConfigError).field).toBe(field);
  return caught as ConfigError;
}

/**
 * The key's whole order of shards, from `pick()` alone: the shard it picks, then the one it picks
 * once that shard is no longer offered, and so on (pick skips an unoffered shard along the key's
 * own order).
 */
function orderOf(picker: Picker, all: readonly ShardState[], key: string): string[] {
  const order: string[] = [];
  let offered = [...all];
  while (offered.length > 0) {
    const chosen = picker.pick(offered, request(key))!;
    order.push(chosen.id);
    offered = offered.filter((s) => s !== chosen);
  }
  return order;
}

describe('consistentHash({ affinity })', () => {
  it("is 'strict' by default, 'spill' with boundedLoad, and as given otherwise", () => {
    expect(consistentHash().affinity).toBe('strict');
    expect(consistentHash({ algorithm: 'maglev' }).affinity).toBe('strict');
    expect(consistentHash({ boundedLoad: 1.25 }).affinity).toBe('spill');
    expect(consistentHash({ affinity: 'spill' }).affinity).toBe('spill');
    expect(consistentHash({ affinity: 'strict' }).affinity).toBe('strict');
    expect(consistentHash({ affinity: 'spill', boundedLoad: 2 }).affinity).toBe('spill');
  });

  it.each(['loose', '', 'STRICT', 1, null, true])('rejects affinity %j', (affinity) => {
    const error = configError(
      () => consistentHash({ affinity: affinity as 'strict' }),
      'consistentHash.affinity',
    );
    expect(error.message).toContain("'strict', 'spill'");
  });

  it("rejects boundedLoad with affinity 'strict', saying why", () => {
    const error = configError(
      () => consistentHash({ affinity: 'strict', boundedLoad: 1.25 }),
      'consistentHash.affinity',
    );
    expect(error.message).toContain('boundedLoad');
    expect(error.message).toContain("'spill'");
  });

  it('does not change what pick() does: strict and spill pickers pick alike', () => {
    const all = shards(10);
    const strict = consistentHash({ affinity: 'strict' });
    const spill = consistentHash({ affinity: 'spill' });
    strict.rebuild(all);
    spill.rebuild(all);
    const offered = all.filter((s) => s.index % 3 !== 0);
    for (const key of keys(2000)) {
      expect(strict.pick(offered, request(key))).toBe(spill.pick(offered, request(key)));
    }
  });
});

describe.each(ALGORITHMS)('%s: home()', (algorithm) => {
  it('is the first shard of the key order among the given subset', () => {
    const all = shards(12);
    const picker = consistentHash({ algorithm });
    picker.rebuild(all);
    const random = createRandom(7);
    for (const key of keys(300)) {
      const order = orderOf(picker, all, key);
      expect(new Set(order).size).toBe(all.length);
      expect(picker.home(all, key)?.id).toBe(order[0]);
      for (let trial = 0; trial < 4; trial++) {
        const subset = all.filter(() => random() < 0.4);
        const expected = order.find((id) => subset.some((s) => s.id === id));
        const home = picker.home(subset, key);
        expect(home?.id).toBe(expected);
        if (home !== undefined) expect(subset).toContain(home);
      }
    }
  });

  it('ignores boundedLoad and counts no spill, where pick() spills', () => {
    const all = shards(8);
    const bounded = consistentHash({ algorithm, boundedLoad: 1.25 });
    const plain = consistentHash({ algorithm });
    bounded.rebuild(all);
    plain.rebuild(all);
    const ks = keys(500);
    const homes = ks.map((k) => plain.home(all, k));
    // Every shard far over the bound ceil(1.25 × 81 / 8) = 13, except shard-0.
    for (const s of all) s.inFlight = s.index === 0 ? 0 : 50;
    ks.forEach((key, i) => {
      expect(bounded.home(all, key)).toBe(homes[i]);
    });
    expect(bounded.spills).toBe(0);
    let spilled = 0;
    for (const key of ks) {
      const chosen = bounded.pick(all, request(key, 80))!;
      if (chosen !== bounded.home(all, key)) spilled++;
    }
    expect(spilled).toBeGreaterThan(ks.length / 2);
    expect(bounded.spills).toBe(spilled);
  });

  it('is undefined for no shards, rejects a missing or mistyped key, and changes nothing', () => {
    const all: TestShard[] = shards(5);
    const picker = consistentHash({ algorithm, fallback: { name: 'f', pick: (s) => s[0] } });
    picker.rebuild(all);
    expect(picker.home([], 'k')).toBeUndefined();
    // The fallback serves keyless picks; a keyless run has no home.
    expect(() => picker.home(all, undefined as never)).toThrow(MissingKeyError);
    expect(() => picker.home(all, 42 as never)).toThrow(TypeError);
    const before = picker.describe();
    for (const key of keys(100)) picker.home(all.slice(1, 4), key);
    expect(picker.describe()).toEqual(before);
    expect(picker.spills).toBe(0);
  });

  it('builds from the given shards on first use, as pick() does', () => {
    const all = shards(9);
    const lazy = consistentHash({ algorithm });
    const eager = consistentHash({ algorithm });
    eager.rebuild(all);
    for (const key of keys(200)) expect(lazy.home(all, key)).toBe(eager.home(all, key));
  });
});
