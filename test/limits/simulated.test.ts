/**
 * Adaptive limits on the simulator (virtual time, seeded): four shards that each serve 8 calls at
 * once in 10 ms (3 200 calls/s in all); at t = 2 s shard "s0" halves to 4 at once (400 calls/s),
 * the rest waiting in its FIFO queue — the wait counts in the latency the balancer measures.
 * Open-loop arrivals at 70 % of the original capacity (2 240/s): after the halving, s0's round-robin
 * share (560/s) exceeds what it serves, and only a limit that shrinks keeps its queue short.
 *
 * Round robin, not the default Peak EWMA, so that the picker does not steer around the slow shard
 * by itself: what keeps s0's queue short here is its concurrency limit alone.
 */
import { describe, expect, it } from 'vitest';
import type { BalancerOptions } from '../../src/core/options.js';
import { gradient } from '../../src/limits/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { type SimulationResult, simulate } from '../../src/testing/index.js';

const CAPACITY = 8;
const HALVED = 4;
const LATENCY_MS = 10;
const DROP_AT_MS = 2_000;
const RATE = 0.7 * 4 * CAPACITY * (1000 / LATENCY_MS);
const REQUESTS = 15_000; // ≈ 6.7 virtual s: 4.7 s after the halving
const SEED = 7;

function run(
  maxInFlightPerShard: BalancerOptions['maxInFlightPerShard'],
  options: { halve?: boolean; rate?: number; requests?: number } = {},
): Promise<SimulationResult> {
  return simulate({
    picker: roundRobin(),
    balancerOptions: { maxInFlightPerShard },
    shards: ['s0', 's1', 's2', 's3'].map((id) => ({
      id,
      latency: LATENCY_MS,
      capacity: CAPACITY,
      schedule:
        id === 's0' && options.halve !== false ? [{ atMs: DROP_AT_MS, capacity: HALVED }] : [],
    })),
    arrivals: { rate: options.rate ?? RATE },
    requests: options.requests ?? REQUESTS,
    seed: SEED,
  });
}

/** s0's in-flight points (sampled every 100 virtual ms) at or after `fromMs`. */
function s0From(result: SimulationResult, fromMs: number): number[] {
  const points = result.series.inFlight.s0!;
  return points.filter((_, i) => result.series.t[i]! >= fromMs);
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe('adaptive limits on a simulated shard whose capacity halves', () => {
  it('gradient: in-flight settles near the new capacity, p99 stays bounded; fixed 64: p99 explodes', async () => {
    // Unloaded: 10 % of capacity, no halving: every call is served at once, p99 = 10 ms.
    const unloaded = await run(64, { halve: false, rate: 320, requests: 2_000 });
    expect(unloaded.latency.p99).toBe(LATENCY_MS);

    // tolerance 1.25, queueSize 1: the limit settles near tolerance × capacity + queueSize
    // (see GradientLimit), 1.25 × 4 + 1 = 6 for the halved shard.
    const adaptive = await run(
      gradient({ initial: CAPACITY, max: 64, tolerance: 1.25, queueSize: 1 }),
    );
    const fixed = await run(64);

    // Settled within 1 virtual s of the halving (≤ 400 of s0's samples at 400 calls/s), and held:
    // measured mean 6.5, max 9 from t = 3 s; mean 6.7 over the last third.
    const settled = s0From(adaptive, DROP_AT_MS + 1_000);
    expect(mean(settled)).toBeLessThanOrEqual(2 * HALVED);
    expect(Math.max(...settled)).toBeLessThanOrEqual(3 * HALVED);
    const lastThird = s0From(adaptive, (adaptive.durationMs * 2) / 3);
    expect(mean(lastThird)).toBeLessThanOrEqual(2 * HALVED);
    // p99 bounded: measured 19.7 ms (2.0× unloaded).
    expect(adaptive.latency.p99).toBeLessThanOrEqual(3 * unloaded.latency.p99);
    // The other shards took the rest: nothing failed, and each served more than s0.
    expect(adaptive.failures).toBe(0);
    const [s0, ...others] = adaptive.perShard;
    for (const shard of others) expect(shard.requests).toBeGreaterThan(s0!.requests);

    // Fixed 64: s0 keeps taking its share, its queue grows (measured mean 62 in flight over the
    // last third) and p99 explodes (measured 159 ms, 8× the adaptive run's).
    expect(fixed.failures).toBe(0);
    expect(mean(s0From(fixed, (fixed.durationMs * 2) / 3))).toBeGreaterThanOrEqual(32);
    expect(fixed.latency.p99).toBeGreaterThanOrEqual(5 * adaptive.latency.p99);
    expect(fixed.latency.p99).toBeGreaterThanOrEqual(10 * unloaded.latency.p99);
  });
});
