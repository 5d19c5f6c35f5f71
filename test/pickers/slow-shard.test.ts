import { describe, expect, it } from 'vitest';
import { peakEwma, roundRobin } from '../../src/pickers/index.js';
import { constant, simulate } from '../../src/testing/index.js';

/**
 * One shard 10× slower (20 ms vs 2 ms), 32 callers, on the simulator's virtual time: the share
 * the slow shard gets is the picker's doing, exactly reproducible by seed, however busy the
 * machine. Bound for Peak EWMA: the three fast shards hold ~10 calls each, cost ≈ 2 ms × 11; the
 * slow one costs ≈ 20 ms × (k + 1), so it wins a pair only while it holds at most one call.
 */
describe('a slow shard, on virtual time', () => {
  const shards = [
    { id: 'a', latency: constant(2) },
    { id: 'b', latency: constant(2) },
    { id: 'c', latency: constant(2) },
    { id: 'slow', latency: constant(20) },
  ];

  it('gets a small share under peakEwma (< 5 %)', async () => {
    const result = await simulate({
      picker: peakEwma(),
      shards,
      requests: 4_000,
      concurrency: 32,
      seed: 7,
    });
    const slow = result.perShard.find((s) => s.id === 'slow')!;
    expect(slow.requests / 4_000).toBeLessThan(0.05);
    expect(result.failures).toBe(0);
  });

  it('gets its 25 % under round robin, and costs the p99', async () => {
    const rr = await simulate({
      picker: roundRobin(),
      shards,
      requests: 4_000,
      concurrency: 32,
      seed: 7,
    });
    expect(rr.perShard.find((s) => s.id === 'slow')!.requests).toBe(1_000);
    const ewma = await simulate({
      picker: peakEwma(),
      shards,
      requests: 4_000,
      concurrency: 32,
      seed: 7,
    });
    expect(ewma.latency.p99).toBeLessThan(rr.latency.p99);
  });
});
