import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/pickers/index.js';
import { simulate } from '../../src/testing/index.js';

describe('simulate: a warm-up run retried after the warm-up leaves no per-shard figure', () => {
  it("perShard p99 and maxInFlight leave out a warm-up run's retry attempt (docs/reference.md: left out of every figure)", async () => {
    // One closed-loop caller. Run 1 (warm-up) fails on "a" at 10 ms (warm-up ended at 5 ms),
    // retries on "slow" (1 000 ms). Run 2 (the only measured run) goes to "a", healthy by then.
    const r = await simulate({
      picker: roundRobin,
      balancerOptions: {
        retry: { attempts: 2, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
        health: false,
      },
      shards: [
        { id: 'a', latency: 10, failureRate: 1, schedule: [{ atMs: 20, failureRate: 0 }] },
        { id: 'slow', latency: 1_000 },
      ],
      concurrency: 1,
      requests: 1,
      warmupMs: 5,
      seed: 1,
    });
    const slow = r.perShard.find((s) => s.id === 'slow')!;
    const a = r.perShard.find((s) => s.id === 'a')!;
    expect(r.warmup.requests).toBe(1);
    // The measured run: one attempt, on "a", 10 ms.
    expect({ a: a.requests, slow: slow.requests, retries: r.retries }).toEqual({
      a: 1,
      slow: 0,
      retries: 0,
    });
    // "slow" served no measured attempt: no latency and no in-flight figure of the measurement.
    expect({ p99: slow.p99, maxInFlight: slow.maxInFlight }).toEqual({ p99: 0, maxInFlight: 0 });
  });
});
