import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/pickers/index.js';
import { exponential, quantile, simulate } from '../../src/testing/index.js';

/** The documented definition, in integer arithmetic: smallest value with ≥ q·n values at or below it. */
function nearestRank(sorted: ArrayLike<number>, num: number, den: number): number {
  const n = sorted.length;
  const rank = Math.max(1, Math.ceil((num * n) / den - 1e-9));
  return sorted[Math.min(n, rank) - 1]!;
}

describe('quantile: nearest rank as documented', () => {
  it('quantile(1..100, 0.07) is 7: 7 of 100 values (0.07) are at or below 7', () => {
    const values = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(values, 0.07)).toBe(7);
    expect(quantile(values, 0.14)).toBe(14);
    expect(quantile(values, 0.55)).toBe(55);
  });

  it('latency.cdf.ms[i] is the nearest-rank quantile at cdf.q[i]', async () => {
    const r = await simulate({
      picker: roundRobin,
      shards: [{ id: 'a', latency: exponential(10) }],
      concurrency: 1,
      requests: 200,
      latencies: 'sorted',
      seed: 1,
    });
    const sorted = r.latency.sorted!;
    const wrong: string[] = [];
    for (let i = 1; i <= 200; i++) {
      const want = nearestRank(sorted, i, 200);
      if (r.latency.cdf.ms[i - 1] !== want) wrong.push(`q=${i}/200`);
    }
    expect(wrong).toEqual([]);
  });

  it('quantile with q = NaN returns a number (or throws a ConfigError), not undefined', () => {
    let out: unknown;
    try {
      out = quantile([1, 2, 3], Number.NaN);
    } catch (e) {
      out = e;
    }
    expect(typeof out === 'number' || (out as Error)?.name === 'ConfigError').toBe(true);
  });
});
