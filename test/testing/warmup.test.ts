/**
 * `simulate({ warmupMs | warmupRequests })`: the runs admitted during the warm-up run, but every
 * figure of the result leaves them out, and `warmup` says how many there were and when it ended.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { p2c, roundRobin } from '../../src/pickers/index.js';
import { exponential, type SimulateOptions, simulate } from '../../src/testing/index.js';

/** One shard serving one run at a time: 100 ms a run until t = 500, then 10 ms. */
function slowStart(): SimulateOptions {
  return {
    picker: roundRobin(),
    shards: [{ id: 'a', latency: 100, capacity: 1, schedule: [{ atMs: 500, latency: 10 }] }],
    concurrency: 1,
    requests: 5,
    seed: 1,
  };
}

describe('simulate warm-up', () => {
  it('leaves the runs admitted before warmupMs out of the latency figures (exact)', async () => {
    const without = await simulate({ ...slowStart(), requests: 10 });
    // Runs admitted at 0, 100, … 400 take 100 ms; the next five 10 ms each.
    expect(without.latency.mean).toBe(55);
    expect(without.warmup).toEqual({ requests: 0, ms: 0 });

    const warm = await simulate({ ...slowStart(), warmupMs: 500 });
    expect(warm.warmup).toEqual({ requests: 5, ms: 500 });
    expect(warm.latency.mean).toBe(10);
    expect(warm.latency.p999).toBe(10);
    expect(warm.perShard[0]!.requests).toBe(5);
    expect(warm.perShard[0]!.p99).toBe(10);
    expect(warm.durationMs).toBe(550);
    // The series still covers the warm-up, so a plot shows it.
    expect(warm.series.t[0]).toBe(0);
  });

  it('warmupRequests ends the warm-up when the next run is admitted', async () => {
    const byCount = await simulate({ ...slowStart(), warmupRequests: 5 });
    const byTime = await simulate({ ...slowStart(), warmupMs: 500 });
    expect(byCount.warmup).toEqual({ requests: 5, ms: 500 });
    expect(byCount.latency).toEqual(byTime.latency);
    expect(byCount.perShard).toEqual(byTime.perShard);
  });

  it('counts only measured attempts, failures and retries per shard', async () => {
    // Shard `b` refuses every call during the first second; the balancer retries elsewhere.
    const options: SimulateOptions = {
      picker: roundRobin(),
      balancerOptions: { retry: { attempts: 3, budget: false }, health: false },
      shards: [
        { id: 'a', latency: exponential(5) },
        {
          id: 'b',
          latency: exponential(5),
          schedule: [
            { atMs: 0, down: true },
            { atMs: 1_000, down: false },
          ],
        },
      ],
      arrivals: { rate: 200 },
      requests: 1_000,
      seed: 4,
    };
    const cold = await simulate(options);
    expect(cold.retries).toBeGreaterThan(0);
    expect(cold.perShard[1]!.failures).toBeGreaterThan(0);

    const warm = await simulate({ ...options, warmupMs: 1_500 });
    expect(warm.warmup.ms).toBe(1_500);
    // ~200 runs a second for 1.5 s: a Poisson count, not an exact one.
    expect(warm.warmup.requests).toBeGreaterThan(200);
    expect(warm.retries).toBe(0);
    expect(warm.failures).toBe(0);
    expect(warm.perShard.map((s) => s.failures)).toEqual([0, 0]);
    // Every measured run made one attempt: the per-shard counts add up to `requests` exactly.
    expect(warm.perShard.reduce((sum, s) => sum + s.requests, 0)).toBe(1_000);
    expect(warm.latency.histogram.counts.reduce((sum, n) => sum + n, 0)).toBe(1_000);
  });

  it('is deterministic with a warm-up, in an open and a closed loop', async () => {
    const fleet = {
      picker: p2c,
      shards: Array.from({ length: 4 }, (_, i) => ({
        id: `s${i}`,
        latency: exponential(10),
        capacity: 2,
      })),
      requests: 2_000,
      seed: 8,
    };
    const open: SimulateOptions = { ...fleet, arrivals: { rate: 400 }, warmupRequests: 500 };
    const openRun = await simulate(open);
    expect(openRun.warmup.requests).toBe(500);
    expect(await simulate(open)).toEqual(openRun);
    const closed: SimulateOptions = { ...fleet, concurrency: 6, warmupMs: 200 };
    const closedRun = await simulate(closed);
    expect(await simulate(closed)).toEqual(closedRun);
    expect(closedRun.latency.histogram.counts.reduce((sum, n) => sum + n, 0)).toBe(2_000);
  });

  it.each([
    [{ warmupMs: -1 }, 'warmupMs'],
    [{ warmupMs: Number.POSITIVE_INFINITY }, 'warmupMs'],
    [{ warmupRequests: 1.5 }, 'warmupRequests'],
    [{ warmupMs: 10, warmupRequests: 10 }, 'warmupRequests'],
    [{ latencies: 'unsorted' }, 'latencies'],
  ])('rejects %j with a ConfigError naming %s', async (extra, field) => {
    const options = { ...slowStart(), ...extra } as SimulateOptions;
    const error = await simulate(options).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
  });
});
