import { describe, expect, it } from 'vitest';
import { createRandom } from '../../../src/base/random.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { movedFraction, slotOf, slotStart } from '../../../src/pickers/hashing/slots.js';
import { keys, mapping, shards } from './helpers.js';

const ALGORITHMS = ['ring', 'maglev', 'rendezvous', 'jump'] as const;
const KEYS = keys(300_000, 'describe-');

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

describe.each(ALGORITHMS)('%s: describe()', (algorithm) => {
  const weights = algorithm === 'jump' ? undefined : [1, 2, 3, 1, 1, 2, 1, 1, 4, 1];

  it("lists the membership in order with shares that sum to 1 and match the keys' counts", () => {
    const picker = consistentHash({ algorithm });
    const all = shards(10, weights);
    picker.rebuild(all);
    const described = picker.describe();
    expect(described.algorithm).toBe(algorithm);
    expect(described.shards.map((s) => s.id)).toEqual(all.map((s) => s.id));
    expect(sum(described.shards.map((s) => s.share))).toBeCloseTo(1, 10);
    // A share of p is estimated from 300 000 keys with σ = √(p(1−p)/300 000) ≤ 0.0009.
    const counts = new Map<string | undefined, number>();
    for (const id of mapping(picker, all, KEYS)) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const { id, share } of described.shards) {
      expect(Math.abs((counts.get(id) ?? 0) / KEYS.length - share)).toBeLessThan(0.005);
    }
  });

  it('is empty before any membership, and follows a rebuild', () => {
    const picker = consistentHash({ algorithm });
    expect(picker.describe().shards).toEqual([]);
    picker.rebuild(shards(3));
    expect(picker.describe().shards.map((s) => s.id)).toEqual(['shard-0', 'shard-1', 'shard-2']);
  });
});

describe('describe(): sizes and exact shares', () => {
  it('ring: points are Σ max(1, round(vnodes × weight)), and shares follow weights', () => {
    const picker = consistentHash({ algorithm: 'ring', vnodes: 100 });
    picker.rebuild(shards(4, [1, 2.5, 0.001, 1]));
    const described = picker.describe();
    expect(described.points).toBe(100 + 250 + 1 + 100);
    expect(described.tableSize).toBeUndefined();
    expect(described.shards[2]!.share).toBeLessThan(0.02);
    expect(described.shards[1]!.share).toBeGreaterThan(described.shards[0]!.share);
  });

  it('maglev: the table size, and equal shards within one slot of each other', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    picker.rebuild(shards(7));
    const described = picker.describe();
    expect(described.tableSize).toBe(65537);
    expect(described.points).toBeUndefined();
    const shares = described.shards.map((s) => s.share);
    // 65537 = 7 × 9362 + 3: three shards hold 9363 slots, four hold 9362.
    expect((Math.max(...shares) - Math.min(...shares)) * 65537).toBeLessThan(1.01);
  });

  it('rendezvous and jump: the expected shares', () => {
    const rendezvous = consistentHash({ algorithm: 'rendezvous' });
    rendezvous.rebuild(shards(3, [1, 2, 5]));
    expect(rendezvous.describe().shards.map((s) => s.share)).toEqual([1 / 8, 2 / 8, 5 / 8]);
    const jump = consistentHash({ algorithm: 'jump' });
    jump.rebuild(shards(4));
    expect(jump.describe().shards.map((s) => s.share)).toEqual([0.25, 0.25, 0.25, 0.25]);
  });
});

describe('Maglev slot intervals (Lemire multiply-shift)', () => {
  it('slotStart(c) is the first hash slotOf puts in slot c, at any table size', () => {
    const random = createRandom(11);
    for (const m of [2, 13, 65537, 655373, 2097143, 6553577, 10000019]) {
      expect(slotStart(0, m)).toBe(0);
      expect(slotStart(m, m)).toBe(2 ** 32);
      expect(slotOf(2 ** 32 - 1, m)).toBe(m - 1);
      for (let trial = 0; trial < 2000; trial++) {
        const c = 1 + Math.floor(random() * (m - 1));
        const h = slotStart(c, m);
        expect(slotOf(h, m)).toBe(c);
        expect(slotOf(h - 1, m)).toBe(c - 1);
      }
    }
  });

  it('matches the exact integer boundaries ⌈c·2^32/M⌉ while h × M is exact (M < 2^21)', () => {
    for (const m of [3, 1009, 65537]) {
      for (let c = 0; c <= m; c += Math.max(1, Math.floor(m / 500))) {
        const exact = ((BigInt(c) << 32n) + BigInt(m) - 1n) / BigInt(m);
        expect(slotStart(c, m)).toBe(Number(exact));
      }
    }
  });

  it('movedFraction merges intervals exactly: small tables against a brute-force sum', () => {
    const random = createRandom(5);
    for (const [m1, m2] of [
      [13, 17],
      [17, 13],
      [5, 5],
      [1009, 2],
    ] as const) {
      const a = Int32Array.from({ length: m1 }, () => Math.floor(random() * 3));
      const b = Int32Array.from({ length: m2 }, () => Math.floor(random() * 3));
      // Brute force with BigInt: every boundary of both tables, owner compared per piece.
      const bounds = new Set<bigint>();
      for (let c = 0; c <= m1; c++) bounds.add(((BigInt(c) << 32n) + BigInt(m1) - 1n) / BigInt(m1));
      for (let c = 0; c <= m2; c++) bounds.add(((BigInt(c) << 32n) + BigInt(m2) - 1n) / BigInt(m2));
      const sorted = [...bounds].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      let moved = 0n;
      for (let k = 0; k + 1 < sorted.length; k++) {
        const h = sorted[k]!;
        const i = Number((h * BigInt(m1)) >> 32n);
        const j = Number((h * BigInt(m2)) >> 32n);
        if (a[i] !== b[j]) moved += sorted[k + 1]! - h;
      }
      expect(movedFraction(a, b)).toBe(Number(moved) / 2 ** 32);
    }
    expect(movedFraction(new Int32Array([1, 2, 3]), new Int32Array([1, 2, 3]))).toBe(0);
    expect(movedFraction(new Int32Array([0, 0]), new Int32Array([1, 1, 1]))).toBe(1);
  });
});
