import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { consistentHash, jumpHash } from '../../../src/pickers/hashing/index.js';
import { balance, keys, mapping, moves, shards } from './helpers.js';

const halves = (key: bigint) => [Number(key >> 32n), Number(key & 0xffffffffn)] as const;

describe('jumpHash', () => {
  // Vectors of the reference C++ (Lamping & Veach), as checked by ClickHouse's
  // jumpConsistentHash tests and the Rust jump-consistent-hash crate.
  it.each([
    [1n, 1, 0],
    [42n, 57, 43],
    [256n, 1024, 520],
    [0xdead10ccn, 1, 0],
    [0xdead10ccn, 666, 361],
    [16045690984833335023n, 255, 237],
    [0n, 60, 0],
    [1n, 60, 55],
    [2n, 60, 46],
  ])('jump(%d, %d) = %d', (key, n, expected) => {
    expect(jumpHash(...halves(key), n)).toBe(expected);
  });

  it('growing n by one moves keys only into the new bucket (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.integer({ min: 1, max: 5000 }),
        (key, n) => {
          const [hi, lo] = halves(key);
          const before = jumpHash(hi, lo, n);
          const after = jumpHash(hi, lo, n + 1);
          expect(after === before || after === n).toBe(true);
        },
      ),
      { numRuns: 500, seed: 6 },
    );
  });
});

describe('jump picker', () => {
  it('appending a shard only moves keys onto it, about 1/(n+1) of them (property)', () => {
    const KEYS = keys(3000);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), (n) => {
        const picker = consistentHash({ algorithm: 'jump' });
        const before = shards(n);
        picker.rebuild(before);
        const was = mapping(picker, before, KEYS);
        const after = shards(n + 1);
        picker.rebuild(after);
        const { moved, illegal } = moves(
          was,
          mapping(picker, after, KEYS),
          (_, to) => to === `shard-${n}`,
        );
        expect(illegal).toBe(0);
        expect(moved / KEYS.length).toBeLessThan(1 / (n + 1) + 0.04);
      }),
      { numRuns: 25, seed: 7 },
    );
  });

  it('8 shards, 200k keys: max/mean ≤ 1.05', () => {
    const picker = consistentHash({ algorithm: 'jump' });
    const all = shards(8);
    picker.rebuild(all);
    expect(balance(picker, all, 200_000).maxOverMean).toBeLessThanOrEqual(1.05);
  });

  it('100 shards, 1M keys: max/mean ≤ 1.05', () => {
    const picker = consistentHash({ algorithm: 'jump' });
    const all = shards(100);
    picker.rebuild(all);
    expect(balance(picker, all, 1_000_000).maxOverMean).toBeLessThanOrEqual(1.05);
  });
});
