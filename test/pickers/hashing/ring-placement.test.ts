import { describe, expect, it } from 'vitest';
import { murmur3_32 } from '../../../src/hash/murmur3.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { KEY_SEED, type KeyHash } from '../../../src/pickers/hashing/order.js';
import { keys, mapping, shards, type TestShard } from './helpers.js';

const KNOWN = [
  'alpha',
  'bravo',
  'charlie',
  'delta',
  'echo',
  'foxtrot',
  'ünïcödé',
  'user:42',
  'user:1000000',
  'order-7',
  '',
  '🌵',
];

/**
 * The ring as its TSDoc defines it, rebuilt the slow and obvious way: point j of a shard is
 * murmur3(id, j), equal points ordered by id, a key goes to the first point at or after its hash
 * (wrapping). Any faster lookup must give exactly this.
 */
function oracle(all: readonly TestShard[], vnodes: number, hash: KeyHash = murmur3_32) {
  const points: { point: number; id: string }[] = [];
  for (const s of all) {
    const count = Math.max(1, Math.round(vnodes * s.weight));
    for (let j = 0; j < count; j++) points.push({ point: hash(s.id, j) >>> 0, id: s.id });
  }
  points.sort((a, b) => a.point - b.point || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return (key: string): string => {
    const h = hash(key, KEY_SEED) >>> 0;
    let lo = 0;
    let hi = points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (points[mid]!.point < h) lo = mid + 1;
      else hi = mid;
    }
    return points[lo === points.length ? 0 : lo]!.id;
  };
}

// Computed once with the lookup of before the indexed search (a binary search narrowed by the
// hash's top 16 bits), then frozen: a faster lookup must place every key where it was.
describe('ring: pinned placements', () => {
  it('1000 equal shards', () => {
    const all = shards(1000);
    const picker = consistentHash({ algorithm: 'ring' });
    picker.rebuild(all);
    expect(mapping(picker, all, KNOWN)).toEqual([
      'shard-879',
      'shard-339',
      'shard-550',
      'shard-60',
      'shard-801',
      'shard-276',
      'shard-743',
      'shard-521',
      'shard-916',
      'shard-45',
      'shard-66',
      'shard-632',
    ]);
  });

  it('100 shards of weights 1, 1.5, 2, 2.5', () => {
    const all = shards(
      100,
      Array.from({ length: 100 }, (_, i) => 1 + (i % 4) * 0.5),
    );
    const picker = consistentHash({ algorithm: 'ring' });
    picker.rebuild(all);
    expect(mapping(picker, all, KNOWN)).toEqual([
      'shard-18',
      'shard-87',
      'shard-77',
      'shard-60',
      'shard-85',
      'shard-67',
      'shard-38',
      'shard-25',
      'shard-86',
      'shard-45',
      'shard-66',
      'shard-94',
    ]);
  });
});

describe('ring: lookup equals the plain definition', () => {
  it.each([
    [1, 160],
    [8, 160],
    [1000, 160],
    [300, 7],
  ])('%i shards at %i vnodes, 50 000 keys', (n, vnodes) => {
    const all = shards(
      n,
      Array.from({ length: n }, (_, i) => 1 + (i % 3)),
    );
    const picker = consistentHash({ algorithm: 'ring', vnodes });
    picker.rebuild(all);
    const expected = oracle(all, vnodes);
    const ks = keys(50_000, `n${n}:`);
    const got = mapping(picker, all, ks);
    const wrong = ks.filter((k, i) => got[i] !== expected(k));
    expect(wrong).toEqual([]);
  });

  it('with a poor custom hash (256 distinct values: long runs of equal points)', () => {
    const coarse: KeyHash = (key, seed) => (murmur3_32(key, seed) >>> 24) << 24;
    const all = shards(50);
    const picker = consistentHash({ algorithm: 'ring', hash: coarse });
    picker.rebuild(all);
    const expected = oracle(all, 160, coarse);
    const ks = keys(20_000, 'coarse:');
    const got = mapping(picker, all, ks);
    expect(ks.filter((k, i) => got[i] !== expected(k))).toEqual([]);
    expect(new Set(got).size).toBeGreaterThan(4);
  });
});
