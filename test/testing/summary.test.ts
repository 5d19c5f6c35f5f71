/**
 * The latency distribution `simulate()` returns: the nearest-rank quantile every table shares, the
 * fixed log-spaced histogram, and the sorted latencies on request.
 */
import { describe, expect, it } from 'vitest';
import { p2c } from '../../src/pickers/index.js';
import {
  constant,
  LATENCY_BUCKET_EDGES_MS,
  lognormal,
  quantile,
  simulate,
} from '../../src/testing/index.js';

describe('quantile (nearest rank)', () => {
  it('returns the smallest value with at least a fraction q at or below it', () => {
    const values = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(values, 0.99)).toBe(99);
    expect(quantile(values, 0.999)).toBe(100);
    expect(quantile(values, 0.5)).toBe(50);
    expect(quantile(values, 0.505)).toBe(51);
    expect(quantile(values, 0)).toBe(1);
    expect(quantile(values, 1)).toBe(100);
    expect(quantile([7], 0.5)).toBe(7);
    expect(quantile([], 0.5)).toBe(0);
  });
});

describe('latency histogram', () => {
  it('has 181 fixed edges, 10^(k/20) ms from 0.01 ms to 10^7 ms', () => {
    expect(LATENCY_BUCKET_EDGES_MS).toHaveLength(181);
    expect(LATENCY_BUCKET_EDGES_MS[0]).toBeCloseTo(0.01, 15);
    expect(LATENCY_BUCKET_EDGES_MS[40]).toBe(1);
    expect(LATENCY_BUCKET_EDGES_MS[60]).toBe(10);
    expect(LATENCY_BUCKET_EDGES_MS[180]).toBe(1e7);
    for (let i = 1; i < LATENCY_BUCKET_EDGES_MS.length; i++) {
      expect(LATENCY_BUCKET_EDGES_MS[i]! / LATENCY_BUCKET_EDGES_MS[i - 1]!).toBeCloseTo(
        10 ** (1 / 20),
        12,
      );
    }
    expect(Object.isFrozen(LATENCY_BUCKET_EDGES_MS)).toBe(true);
  });

  it('puts a constant latency in the bucket that starts at it', async () => {
    const result = await simulate({
      shards: [{ id: 'a', latency: constant(10) }],
      concurrency: 4, // below the shard's in-flight cap: no run waits in the balancer
      requests: 50,
      seed: 1,
    });
    const { edgesMs, counts } = result.latency.histogram;
    expect(counts).toHaveLength(182);
    // counts[i] holds [edgesMs[i − 1], edgesMs[i]): 10 ms is edgesMs[60], so counts[61].
    expect(counts[61]).toBe(50);
    expect(counts.reduce((sum, n) => sum + n, 0)).toBe(50);
    expect(edgesMs).toBe(LATENCY_BUCKET_EDGES_MS);
  });

  it('counts every measured run in the bucket that holds it, and sorted matches the summary', async () => {
    const result = await simulate({
      picker: p2c(),
      shards: Array.from({ length: 4 }, (_, i) => ({
        id: `s${i}`,
        latency: lognormal(5, 1.2),
        capacity: 2,
      })),
      arrivals: { rate: 600 },
      requests: 5_000,
      latencies: 'sorted',
      seed: 2,
    });
    const sorted = result.latency.sorted!;
    expect(sorted).toBeInstanceOf(Float64Array);
    expect(sorted).toHaveLength(5_000);
    for (let i = 1; i < sorted.length; i++)
      expect(sorted[i]!).toBeGreaterThanOrEqual(sorted[i - 1]!);
    expect(quantile(sorted, 0.99)).toBe(result.latency.p99);
    expect(quantile(sorted, 0.999)).toBe(result.latency.p999);
    const mean = sorted.reduce((sum, ms) => sum + ms, 0) / sorted.length;
    expect(mean).toBeCloseTo(result.latency.mean, 9);

    const { edgesMs, counts } = result.latency.histogram;
    const values = [...sorted];
    const expected = [
      values.filter((ms) => ms < edgesMs[0]!).length,
      ...edgesMs
        .slice(1)
        .map((hi, i) => values.filter((ms) => ms >= edgesMs[i]! && ms < hi).length),
      values.filter((ms) => ms >= edgesMs[edgesMs.length - 1]!).length,
    ];
    expect(counts).toEqual(expected);
    // A long-tailed distribution spreads over many buckets.
    expect(counts.filter((n) => n > 0).length).toBeGreaterThan(40);
  });

  it('returns no sorted latencies unless asked', async () => {
    const result = await simulate({ shards: [{ id: 'a', latency: 1 }], requests: 10, seed: 1 });
    expect(result.latency.sorted).toBeUndefined();
  });
});
