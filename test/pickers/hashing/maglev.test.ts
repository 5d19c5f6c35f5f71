import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { isPrime, nextPrime } from '../../../src/pickers/hashing/maglev.js';
import { balance, keys, mapping, moves, reindexed, shards } from './helpers.js';

const KEYS = keys(5000);

describe('maglev: table size', () => {
  it('finds primes', () => {
    expect([2, 3, 5, 65537, 100003].every(isPrime)).toBe(true);
    expect([0, 1, 4, 65535, 100001, 1.5].some(isPrime)).toBe(false);
    expect(nextPrime(65536)).toBe(65537);
    expect(nextPrime(100_000)).toBe(100_003);
  });
});

describe('maglev: membership changes', () => {
  it('removing one shard moves its keys and at most a few percent of the others (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 40 }), fc.nat(), (n, which) => {
        const before = shards(n);
        const gone = `shard-${which % n}`;
        const picker = consistentHash({ algorithm: 'maglev' });
        picker.rebuild(before);
        const was = mapping(picker, before, KEYS);
        const after = reindexed(before.filter((s) => s.id !== gone));
        picker.rebuild(after);
        const now = mapping(picker, after, KEYS);
        const { moved, illegal } = moves(was, now, (from) => from === gone);
        const owned = was.filter((id) => id === gone).length;
        // Every key of the removed shard moves; Eisenbud et al. §5.3 measure the collateral
        // movement at a few percent of a small table; here M = 65537 ≫ 100 n.
        expect(moved).toBeGreaterThanOrEqual(owned);
        expect(illegal / KEYS.length).toBeLessThan(0.02);
        expect(moved / KEYS.length).toBeLessThan(1 / n + 0.03);
      }),
      { numRuns: 20, seed: 3 },
    );
  });

  it('adding a shard moves about 1/(n+1) of the keys, nearly all onto the new shard', () => {
    const before = shards(10);
    const picker = consistentHash({ algorithm: 'maglev' });
    picker.rebuild(before);
    const was = mapping(picker, before, KEYS);
    const after = shards(11);
    picker.rebuild(after);
    const { moved, illegal } = moves(
      was,
      mapping(picker, after, KEYS),
      (_, to) => to === 'shard-10',
    );
    expect(moved / KEYS.length).toBeLessThan(1 / 11 + 0.03);
    expect(illegal / KEYS.length).toBeLessThan(0.02);
  });
});

describe('maglev: balance', () => {
  it('respects weights 1, 2, 3 in proportion (within 3 %)', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const all = shards(3, [1, 2, 3]);
    picker.rebuild(all);
    const { counts } = balance(picker, all, 100_000);
    counts.forEach((c, i) => {
      const expected = (100_000 * (i + 1)) / 6;
      expect(Math.abs(c - expected) / expected).toBeLessThan(0.03);
    });
  });

  it('8 shards, 200k keys: max/mean ≤ 1.02', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const all = shards(8);
    picker.rebuild(all);
    expect(balance(picker, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.02);
  });

  // The table itself is even to within one slot (655 or 656 of 65537 each); what is left is the
  // sampling noise of the keys, ~1/√(keys per shard) per shard, so 100 shards need 3M keys
  // (30 000 per shard, σ ≈ 0.6 %) for the largest to stay within 2 %.
  it('100 shards, 3M keys: max/mean ≤ 1.02', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const all = shards(100);
    picker.rebuild(all);
    expect(balance(picker, all, 3_000_000).maxOverMean).toBeLessThanOrEqual(1.02);
  });
});
