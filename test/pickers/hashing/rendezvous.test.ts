import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import {
  assertRemovalMovesOnlyOwnedKeys,
  balance,
  keys,
  mapping,
  moves,
  reindexed,
  shard,
  shards,
} from './helpers.js';

const KEYS = keys(2000);

describe('rendezvous: membership changes (property)', () => {
  it('adding a shard anywhere in the order only moves keys onto the new shard', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 12 }),
        fc.constantFrom(1, 2, 0.5),
        (n, at, newId, weight) => {
          fc.pre(!/^shard-\d+$/.test(newId));
          const before = shards(
            n,
            Array.from({ length: n }, (_, i) => 1 + (i % 3)),
          );
          const picker = consistentHash({ algorithm: 'rendezvous' });
          picker.rebuild(before);
          const was = mapping(picker, before, KEYS);
          const list = [...before];
          list.splice(at % (n + 1), 0, shard(newId, 0, weight));
          const after = reindexed(list);
          picker.rebuild(after);
          const { illegal } = moves(was, mapping(picker, after, KEYS), (_, to) => to === newId);
          expect(illegal).toBe(0);
        },
      ),
      { numRuns: 25, seed: 4 },
    );
  });

  it('removing a shard only moves the keys it owned', () => {
    assertRemovalMovesOnlyOwnedKeys('rendezvous', KEYS, 5);
  });
});

describe('rendezvous: balance', () => {
  it('respects weights 1, 2, 3 in proportion (within 3 %)', () => {
    const picker = consistentHash({ algorithm: 'rendezvous' });
    const all = shards(3, [1, 2, 3]);
    picker.rebuild(all);
    const { counts } = balance(picker, all, 100_000);
    counts.forEach((c, i) => {
      const expected = (100_000 * (i + 1)) / 6;
      expect(Math.abs(c - expected) / expected).toBeLessThan(0.03);
    });
  });

  it('8 shards, 200k keys: max/mean ≤ 1.05', () => {
    const picker = consistentHash({ algorithm: 'rendezvous' });
    const all = shards(8);
    picker.rebuild(all);
    expect(balance(picker, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.05);
  });

  // 1M keys: 10 000 per shard, σ ≈ 1 %, so sampling noise alone stays well inside 5 %.
  it('100 shards, 1M keys: max/mean ≤ 1.05', () => {
    const picker = consistentHash({ algorithm: 'rendezvous' });
    const all = shards(100);
    picker.rebuild(all);
    expect(balance(picker, all, 1_000_000).maxOverMean).toBeLessThanOrEqual(1.05);
  });

  it('the weighted (logarithmic) path balances equal weights alike: 20 shards of weight 2', () => {
    const picker = consistentHash({ algorithm: 'rendezvous' });
    // One weight differs by 1e-6 so that the scores go through −w / ln(h).
    const all = shards(20, [...Array.from({ length: 19 }, () => 2), 2.000001]);
    picker.rebuild(all);
    expect(balance(picker, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.05);
  });
});
