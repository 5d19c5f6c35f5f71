import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/base/errors.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { fillTable } from '../../../src/pickers/hashing/maglev-fill.js';
import { keys, mapping, shards } from './helpers.js';

function configError(fn: () => unknown, field: string): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  expect((caught as ConfigError).field).toBe(field);
  expect((caught as ConfigError).message).toContain(field);
  return caught as ConfigError;
}

describe('ring: bounded construction', () => {
  it('vnodes is at most 10 000', () => {
    expect(consistentHash({ vnodes: 10_000 }).name).toBe('consistent-hash:ring');
    const error = configError(() => consistentHash({ vnodes: 10_001 }), 'consistentHash.vnodes');
    expect(error.message).toContain('10000');
  });

  it.each([1e6, 1e308])(
    'a weight of %d with the default vnodes is a ConfigError naming it, with the count and the bound',
    (weight) => {
      const picker = consistentHash();
      const error = configError(
        () => picker.rebuild(shards(3, [1, weight, 1])),
        'shards[1].weight',
      );
      expect(error.message).toContain('10000000');
      expect(error.message).toContain('ring points');
      expect(error.message).toMatch(/is (\d\.\d+e\+\d+|beyond 1\.8e\+308) ring points/);
    },
  );

  it('too many points from vnodes names vnodes', () => {
    const picker = consistentHash({ vnodes: 10_000 });
    const error = configError(() => picker.rebuild(shards(1001)), 'consistentHash.vnodes');
    expect(error.message).toContain('1.001e+7 ring points');
  });

  it('a failed rebuild leaves the ring as it was', () => {
    const picker = consistentHash();
    const all = shards(6);
    picker.rebuild(all);
    const before = mapping(picker, all, keys(500));
    const described = picker.describe();
    expect(() => picker.rebuild(shards(6, [1, 1, 1, 1, 1, 1e9]))).toThrow(ConfigError);
    expect(mapping(picker, all, keys(500))).toEqual(before);
    expect(picker.describe()).toEqual(described);
  });

  it('weights 1e-300 and 1e300 side by side: a ConfigError, not an endless build', () => {
    configError(() => consistentHash().rebuild(shards(2, [1e-300, 1e300])), 'shards[1].weight');
    // A tiny weight alone still gets its one point.
    const picker = consistentHash();
    picker.rebuild(shards(3, [1e-300, 1, 1]));
    expect(picker.describe().shards[0]!.share).toBeGreaterThan(0);
  });
});

describe.each(['ring', 'maglev', 'rendezvous'] as const)('%s: weights', (algorithm) => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, '2'])(
    'a weight of %j is a ConfigError naming the shard',
    (weight) => {
      const picker = consistentHash({ algorithm });
      configError(() => picker.rebuild(shards(3, [1, 1, weight as number])), 'shards[2].weight');
    },
  );
});

describe('maglev: extreme weights', () => {
  it('1e-300 against 1e300: every shard holds a slot, shares are finite and sum to 1', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const weights = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 1e-300 : 1e300));
    picker.rebuild(shards(20, weights));
    const shares = picker.describe().shards.map((s) => s.share);
    expect(shares.every((s) => Number.isFinite(s) && s > 0)).toBe(true);
    expect(shares.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    // A light shard holds one slot of 65537; the heavy ones split the rest evenly.
    expect(shares[0]).toBeLessThan(2 / 65537);
    expect(shares[1]).toBeGreaterThan(0.09);
  });

  it('a weight of 1e6 among 1000 shards of weight 1 builds (the heap path, not n steps a slot)', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const weights = Array.from({ length: 1000 }, (_, i) => (i === 0 ? 1e6 : 1));
    picker.rebuild(shards(1000, weights));
    const shares = picker.describe().shards.map((s) => s.share);
    expect(shares[0]).toBeGreaterThan(0.99);
    expect(Math.min(...shares)).toBeGreaterThan(0);
  });
});

/** The Maglev population loop as the paper and Envoy write it: the reference for the heap. */
function referenceFill(m: number, offset: number[], skip: number[], weight: number[]): Int32Array {
  const n = offset.length;
  const table = new Int32Array(m).fill(-1);
  const next = [...offset];
  const turns = new Float64Array(n);
  let filled = 0;
  for (let round = 1; filled < m; round++) {
    for (let i = 0; i < n && filled < m; i++) {
      if (round * weight[i]! < turns[i]!) continue;
      turns[i]! += 1;
      let c = next[i]!;
      while (table[c] !== -1) c = (c + skip[i]!) % m;
      table[c] = i;
      next[i] = (c + skip[i]!) % m;
      filled++;
    }
  }
  return table;
}

describe('maglev: table population', () => {
  it.each([
    ['equal', [1, 1, 1, 1, 1, 1, 1]],
    ['1, 2, 3', [1 / 3, 2 / 3, 1, 1 / 3, 2 / 3, 1]],
    ['one heavy (heap)', [1, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001]],
    ['thirds and tiny (heap)', [0.3, 1, 1e-9, 0.7, 1e-300, 0, 0.05, 0.05, 0.05, 0.05, 0.05]],
    ['many light (heap)', Array.from({ length: 60 }, (_, i) => (i === 30 ? 1 : 0.01 + i / 1e4))],
  ])('fills the same table as the plain loop: %s', (_, weight) => {
    for (const m of [13, 1009, 65537]) {
      if (m < weight.length) continue;
      const offset = weight.map((_, i) => (i * 7919 + 13) % m);
      const skip = weight.map((_, i) => ((i * 104729 + 5) % (m - 1)) + 1);
      const table = new Int32Array(m);
      fillTable(
        table,
        Float64Array.from(offset),
        Float64Array.from(skip),
        Float64Array.from(weight),
      );
      expect(table).toEqual(referenceFill(m, offset, skip, weight));
    }
  });
});

describe('rendezvous: extreme weights', () => {
  it('1e-300 against 1e300 is a ConfigError (its scores would all round to 0)', () => {
    const error = configError(
      () => consistentHash({ algorithm: 'rendezvous' }).rebuild(shards(2, [1e-300, 1e300])),
      'shards[0].weight',
    );
    expect(error.message).toContain('largest weight');
  });

  it('1e300 weights keep finite, distinct scores: keys spread over the heavy shards', () => {
    const picker = consistentHash({ algorithm: 'rendezvous' });
    const all = shards(4, [1e300, 1e300, 1e300, 1]);
    picker.rebuild(all);
    const counts = new Map<string | undefined, number>();
    for (const id of mapping(picker, all, keys(30_000))) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const id of ['shard-0', 'shard-1', 'shard-2']) {
      expect(counts.get(id)).toBeGreaterThan(9000);
    }
    expect(counts.get('shard-3') ?? 0).toBe(0);
  });
});
