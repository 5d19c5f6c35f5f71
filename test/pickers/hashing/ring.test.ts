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

const KEYS = keys(3000);

describe('ring: membership changes (property)', () => {
  it('adding a shard anywhere in the order only moves keys onto the new shard', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 12 }),
        (n, at, newId) => {
          fc.pre(!/^shard-\d+$/.test(newId));
          const before = shards(n);
          const picker = consistentHash({ algorithm: 'ring' });
          picker.rebuild(before);
          const was = mapping(picker, before, KEYS);
          const list = [...before];
          list.splice(at % (n + 1), 0, shard(newId, 0));
          const after = reindexed(list);
          picker.rebuild(after);
          const { moved, illegal } = moves(
            was,
            mapping(picker, after, KEYS),
            (_, to) => to === newId,
          );
          expect(illegal).toBe(0);
          // About 1/(n+1) of the keys move (the ring's spread is ~1/√160 per shard).
          expect(moved / KEYS.length).toBeLessThan(2.2 / (n + 1) + 0.02);
        },
      ),
      { numRuns: 25, seed: 1 },
    );
  });

  it('removing a shard only moves the keys it owned', () => {
    assertRemovalMovesOnlyOwnedKeys('ring', KEYS, 2);
  });

  it('raising a weight only moves keys onto that shard', () => {
    const picker = consistentHash({ algorithm: 'ring' });
    const before = shards(6);
    picker.rebuild(before);
    const was = mapping(picker, before, KEYS);
    const after = shards(6, [1, 1, 3, 1, 1, 1]);
    picker.rebuild(after);
    const { moved, illegal } = moves(
      was,
      mapping(picker, after, KEYS),
      (_, to) => to === 'shard-2',
    );
    expect(illegal).toBe(0);
    expect(moved).toBeGreaterThan(KEYS.length / 10);
  });
});

describe('ring: balance', () => {
  it('respects weights 1, 2, 3 in proportion (within 15 %, the spread of 160 points per unit)', () => {
    const picker = consistentHash({ algorithm: 'ring' });
    const all = shards(3, [1, 2, 3]);
    picker.rebuild(all);
    const { counts } = balance(picker, all, 100_000);
    counts.forEach((c, i) => {
      const expected = (100_000 * (i + 1)) / 6;
      expect(Math.abs(c - expected) / expected).toBeLessThan(0.15);
    });
  });

  it('8 shards, 160 vnodes, 200k keys: max/mean ≤ 1.15', () => {
    const picker = consistentHash({ algorithm: 'ring' });
    const all = shards(8);
    picker.rebuild(all);
    expect(balance(picker, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.15);
  });

  // With v independent points a shard's share has a coefficient of variation of ~1/√v (7.9 % at
  // 160), so the largest of 100 shares sits ~2.5σ above the mean: ~1.2. The 1.15 bound needs more
  // points at this size, which is what `vnodes` is for.
  it('100 shards, 200k keys: max/mean ≤ 1.2 at 160 vnodes, ≤ 1.15 at 640', () => {
    const all = shards(100);
    const standard = consistentHash({ algorithm: 'ring' });
    standard.rebuild(all);
    expect(balance(standard, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.2);
    const dense = consistentHash({ algorithm: 'ring', vnodes: 640 });
    dense.rebuild(all);
    expect(balance(dense, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.15);
  });

  it('every shard owns keys, even with a tiny weight (at least one point)', () => {
    const picker = consistentHash({ algorithm: 'ring', vnodes: 1 });
    const all = shards(4, [0.01, 1, 1, 1]);
    picker.rebuild(all);
    const { counts } = balance(picker, all, 20_000);
    expect(counts[0]).toBeGreaterThan(0);
  });
});
