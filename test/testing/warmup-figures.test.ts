import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/pickers/index.js';
import { type SimulateOptions, simulate } from '../../src/testing/index.js';

/** One shard failing every call after 100 ms, 100 runs/s, 50 measured after a 500 ms warm-up. */
function failingFleet(retry: NonNullable<SimulateOptions['balancerOptions']>['retry']) {
  return simulate({
    picker: roundRobin,
    balancerOptions: { retry, health: false },
    shards: [{ id: 'a', latency: 100, failureRate: 1 }],
    arrivals: { rate: 100 },
    requests: 50,
    warmupMs: 500,
    seed: 1,
  });
}

describe('warm-up is left out of every figure', () => {
  it('perShard.failures counts no attempt of a warm-up run', async () => {
    // No retries: one attempt per run.
    const r = await failingFleet({ attempts: 1 });
    expect(r.failures).toBe(50);
    expect(r.perShard[0]!.requests).toBe(50);
    // Each measured run made one attempt, which failed: 50 failures on the only shard.
    expect(r.perShard[0]!.failures).toBe(50);
  });

  it('retries and perShard.requests count no retry of a warm-up run', async () => {
    const r = await failingFleet({
      attempts: 3,
      budget: false,
      backoff: { baseMs: 50, maxMs: 50 },
    });
    expect(r.failures).toBe(50);
    // Each measured run: 3 attempts, 2 of them retries.
    expect({
      retries: r.retries,
      requests: r.perShard[0]!.requests,
      failures: r.perShard[0]!.failures,
    }).toEqual({ retries: 100, requests: 150, failures: 150 });
  });
});
