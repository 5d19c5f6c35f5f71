import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/base/errors.js';
import { createRandom } from '../../../src/base/random.js';
import { murmur3_32 } from '../../../src/hash/murmur3.js';
import type { RehashEvent } from '../../../src/pickers/hashing/index.js';
import { consistentHash, MAGLEV_TABLE_SIZES } from '../../../src/pickers/hashing/index.js';
import {
  initialTableSize,
  isPrime,
  MAX_TABLE_SIZE,
  Maglev,
  nextPrime,
} from '../../../src/pickers/hashing/maglev.js';
import { movedFraction } from '../../../src/pickers/hashing/slots.js';
import { keys, mapping, shards, shardsOf } from './helpers.js';

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

/** `count` shard ids drawn from a seeded source, as a fleet's host names would be. */
function randomIds(count: number, seed: number): string[] {
  const random = createRandom(seed);
  return Array.from(
    { length: count },
    (_, i) => `node-${Math.floor(random() * 2 ** 40).toString(36)}-${i}`,
  );
}

/** A Maglev table over `ids`, with each slot's owner as a global number, for comparing tables. */
function tableOf(ids: readonly string[], size: number | undefined, number: Map<string, number>) {
  const maglev = new Maglev(size, murmur3_32);
  maglev.build(shardsOf(ids));
  const global = Int32Array.from(ids, (id) => number.get(id)!);
  const owners = new Int32Array(maglev.slots.length);
  for (let c = 0; c < owners.length; c++) owners[c] = global[maglev.slots[c]!]!;
  return { size: maglev.tableSize!, owners };
}

describe('maglev: the table size is chosen once', () => {
  it('from the ladder 65537, 655373, 6553577 (≥ 100 slots per shard), then the next prime', () => {
    expect(MAGLEV_TABLE_SIZES).toEqual([65537, 655373, 6553577]);
    expect(MAGLEV_TABLE_SIZES.every(isPrime)).toBe(true);
    expect(initialTableSize(1)).toBe(65537);
    expect(initialTableSize(655)).toBe(65537);
    expect(initialTableSize(656)).toBe(655373);
    expect(initialTableSize(6553)).toBe(655373);
    expect(initialTableSize(6554)).toBe(6553577);
    expect(initialTableSize(65535)).toBe(6553577);
    expect(initialTableSize(65536)).toBe(nextPrime(6_553_600));
    expect(initialTableSize(100_000)).toBe(MAX_TABLE_SIZE);
    expect(initialTableSize(250_000)).toBe(MAX_TABLE_SIZE);
    expect(isPrime(MAX_TABLE_SIZE)).toBe(true);
  });

  it('at the first non-empty membership, and keeps it when the membership grows or shrinks', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    picker.rebuild([]);
    expect(picker.describe().tableSize).toBeUndefined();
    picker.rebuild(shards(8));
    expect(picker.describe().tableSize).toBe(65537);
    const big = shards(700);
    picker.rebuild(big);
    expect(picker.describe().tableSize).toBe(65537);
    // The same table as a picker given that size from the start.
    const explicit = consistentHash({ algorithm: 'maglev', tableSize: 65537 });
    explicit.rebuild(big);
    expect(mapping(picker, big, keys(5000))).toEqual(mapping(explicit, big, keys(5000)));

    const large = consistentHash({ algorithm: 'maglev' });
    large.rebuild(shards(700));
    expect(large.describe().tableSize).toBe(655373);
    large.rebuild(shards(3));
    expect(large.describe().tableSize).toBe(655373);
    large.rebuild([]);
    large.rebuild(shards(2));
    expect(large.describe().tableSize).toBe(655373);
  });

  it('keeps working below 100 slots per shard, and refuses fewer slots than shards', () => {
    const picker = consistentHash({ algorithm: 'maglev', tableSize: 1009 });
    const ten = shards(10);
    picker.rebuild(ten);
    // 1009 slots for 300 shards: ~3.4 each, every shard still holds some.
    const many = shards(300);
    picker.rebuild(many);
    const shares = picker.describe().shards.map((s) => s.share);
    expect(Math.min(...shares)).toBeGreaterThan(0);
    const error = configError(() => picker.rebuild(shards(1010)), 'consistentHash.tableSize');
    expect(error.message).toContain('1010 shards do not fit in 1009 slots');
    expect(error.message).toContain('picker.resize(');
    expect(picker.describe().shards).toHaveLength(300);
  });
});

// Eisenbud et al. measure about 6/N keys moved per change at these sizes; the goal here is 8/N.
describe('maglev: one shard more or less moves few keys (property over seeds)', () => {
  it.each([700, 1000, 2000])('at %i shards: removing or adding one moves ≤ 8/N', (n) => {
    for (const seed of [1, 2, 3]) {
      const ids = randomIds(n + 1, seed * 1000 + n);
      const number = new Map(ids.map((id, i) => [id, i]));
      const members = ids.slice(0, n);
      const before = tableOf(members, undefined, number);
      expect(before.size).toBe(655373);
      const gone = Math.floor(createRandom(seed)() * n);
      const removed = members.filter((_, i) => i !== gone);
      const added = [...members.slice(0, gone), ids[n]!, ...members.slice(gone)];
      for (const after of [removed, added]) {
        const moved = movedFraction(before.owners, tableOf(after, before.size, number).owners);
        expect(moved).toBeGreaterThan(0.9 / n);
        expect(moved).toBeLessThanOrEqual(8 / n);
      }
    }
  });

  it('the picker keeps its size over the change, so a live rebuild moves as few', () => {
    const ids = randomIds(1001, 9);
    const picker = consistentHash({ algorithm: 'maglev' });
    const before = shardsOf(ids.slice(0, 1000));
    picker.rebuild(before);
    const ks = keys(100_000);
    const was = mapping(picker, before, ks);
    const after = shardsOf(ids);
    picker.rebuild(after);
    const now = mapping(picker, after, ks);
    const moved = was.filter((id, i) => id !== now[i]).length / ks.length;
    expect(moved).toBeLessThanOrEqual(8 / 1000);
  });
});

describe('maglev: resize()', () => {
  it('rebuilds with the new size, returns the exact moved fraction, and tells each listener once', () => {
    const all = shards(4);
    const picker = consistentHash({ algorithm: 'maglev' });
    picker.rebuild(all);
    const ks = keys(200_000, 'resize-');
    const was = mapping(picker, all, ks);
    const heard: RehashEvent[] = [];
    const unsubscribe = picker.onRehash((e) => heard.push(e));
    const event = picker.resize(655373);
    expect(event).toEqual({
      picker: 'consistent-hash:maglev',
      tableSize: 655373,
      previousTableSize: 65537,
      moved: event.moved,
    });
    expect(heard).toEqual([event]);
    expect(picker.describe().tableSize).toBe(655373);
    // The new table is the one a picker of that size builds.
    const fresh = consistentHash({ algorithm: 'maglev', tableSize: 655373 });
    fresh.rebuild(all);
    const now = mapping(picker, all, ks);
    expect(now).toEqual(mapping(fresh, all, ks));
    // Exact over the hash space; 200 000 keys estimate it within a few σ (σ ≈ 0.001).
    const counted = was.filter((id, i) => id !== now[i]).length / ks.length;
    expect(Math.abs(event.moved - counted)).toBeLessThan(0.005);
    expect(event.moved).toBeGreaterThan(0.5);
    // Kept from then on.
    picker.rebuild(shards(5));
    expect(picker.describe().tableSize).toBe(655373);
    unsubscribe();
    unsubscribe();
    picker.resize(65537);
    expect(heard).toHaveLength(1);
  });

  it('to the same size moves nothing; each subscription is called once per resize', () => {
    const picker = consistentHash({ algorithm: 'maglev', tableSize: 1009 });
    picker.rebuild(shards(7));
    let calls = 0;
    const listener = () => calls++;
    const first = picker.onRehash(listener);
    picker.onRehash(listener);
    expect(picker.resize(1009).moved).toBe(0);
    expect(calls).toBe(2);
    first();
    picker.resize(1013);
    expect(calls).toBe(3);
  });

  it('before any membership sets the size for the first build', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    expect(picker.resize(1009)).toEqual({
      picker: 'consistent-hash:maglev',
      tableSize: 1009,
      previousTableSize: 0,
      moved: 0,
    });
    picker.rebuild(shards(20));
    expect(picker.describe().tableSize).toBe(1009);
  });

  it('installs the table even when a listener throws, calls the others, then rethrows', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    picker.rebuild(shards(3));
    const seen: number[] = [];
    picker.onRehash(() => {
      throw new Error('listener broke');
    });
    picker.onRehash((e) => seen.push(e.tableSize));
    expect(() => picker.resize(1009)).toThrow('listener broke');
    expect(seen).toEqual([1009]);
    expect(picker.describe().tableSize).toBe(1009);
  });

  it('is a ConfigError for other algorithms, a bad size, or fewer slots than shards', () => {
    for (const algorithm of ['ring', 'rendezvous', 'jump'] as const) {
      const error = configError(() => consistentHash({ algorithm }).resize(65537), 'tableSize');
      expect(error.message).toContain("only to algorithm 'maglev'");
    }
    const picker = consistentHash({ algorithm: 'maglev' });
    picker.rebuild(shards(20));
    const before = mapping(picker, shards(20), keys(300));
    for (const bad of [65536, 0, -7, 1.5, Number.NaN, 2147483647, '65537']) {
      configError(() => picker.resize(bad as number), 'tableSize');
    }
    const error = configError(() => picker.resize(17), 'tableSize');
    expect(error.message).toContain('20');
    expect(picker.describe().tableSize).toBe(65537);
    expect(mapping(picker, shards(20), keys(300))).toEqual(before);
    configError(() => picker.onRehash('x' as never), 'onRehash listener');
  });
});
