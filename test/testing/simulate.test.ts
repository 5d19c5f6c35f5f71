import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { consistentHash } from '../../src/pickers/hashing/index.js';
import { p2c, peakEwma, random, roundRobin } from '../../src/pickers/index.js';
import {
  constant,
  exponential,
  lognormal,
  type SimulateOptions,
  simulate,
} from '../../src/testing/index.js';
import { MAX_SIMULATED_REQUESTS } from '../../src/testing/simulate-options.js';

function mixed(seed: number): SimulateOptions {
  return {
    picker: p2c(),
    balancerOptions: { retry: { attempts: 3, budget: false }, maxInFlightPerShard: 8 },
    shards: [
      { id: 'a', latency: lognormal(10, 0.5), capacity: 4 },
      { id: 'b', latency: exponential(15), failureRate: 0.05 },
      {
        id: 'c',
        latency: 10,
        capacity: 2,
        schedule: [
          { atMs: 200, latency: 80 },
          { atMs: 400, down: true },
          { atMs: 700, down: false, latency: 10 },
        ],
      },
    ],
    concurrency: 16,
    requests: 5_000,
    keys: { count: 100, distribution: 'zipf', s: 1.1 },
    seed,
    sampleEveryMs: 50,
  };
}

describe('simulate', () => {
  it('is deterministic: the same seed gives a deep-equal result, another seed another', async () => {
    const first = await simulate(mixed(7));
    const again = await simulate(mixed(7));
    expect(again).toEqual(first);
    const other = await simulate(mixed(8));
    expect(other).not.toEqual(first);
    expect(other.latency.p50).not.toBe(first.latency.p50);
  });

  it('counts add up: every attempt lands on a shard, failures and retries are reported', async () => {
    const result = await simulate(mixed(7));
    const attempts = result.perShard.reduce((sum, s) => sum + s.requests, 0);
    expect(attempts).toBe(5_000 + result.retries);
    expect(result.retries).toBeGreaterThan(0); // b fails 5 %, c goes down
    expect(result.perShard.find((s) => s.id === 'b')!.failures).toBeGreaterThan(0);
    expect(result.perShard.find((s) => s.id === 'c')!.failures).toBeGreaterThan(0);
    expect(result.perShard.every((s) => s.maxInFlight <= 8)).toBe(true);
    expect(result.latency.p50).toBeLessThanOrEqual(result.latency.p90);
    expect(result.latency.p90).toBeLessThanOrEqual(result.latency.p99);
    expect(result.latency.p99).toBeLessThanOrEqual(result.latency.p999);
    // Series: one column per shard, as long as the time axis, on the sampling grid.
    expect(result.series.t[1]).toBe(50);
    for (const id of ['a', 'b', 'c']) {
      expect(result.series.inFlight[id]).toHaveLength(result.series.t.length);
    }
  });

  it('queues beyond capacity in FIFO order, and the wait counts in the latency (exact)', async () => {
    // One shard serving one at a time, 10 ms each, 4 callers: the first four runs take 10, 20,
    // 30, 40 ms; every later run finds three ahead of it and takes 40 ms.
    const result = await simulate({
      picker: roundRobin(),
      shards: [{ id: 'only', latency: constant(10), capacity: 1 }],
      concurrency: 4,
      requests: 100,
      seed: 1,
      sampleEveryMs: 5,
    });
    expect(result.durationMs).toBe(1_000);
    expect(result.latency.mean).toBeCloseTo((10 + 20 + 30 + 40 * 97) / 100, 10);
    expect(result.latency.p50).toBe(40);
    expect(result.perShard).toEqual([
      { id: 'only', requests: 100, failures: 0, p99: 40, maxInFlight: 4 },
    ]);
    expect(result.imbalance).toBe(1);
    expect(result.series.inFlight.only!.slice(2, 10)).toEqual([4, 4, 4, 4, 4, 4, 4, 4]);
    expect(result.series.t.at(-1)).toBe(1_000);
    expect(result.series.inFlight.only!.at(-1)).toBe(0);
  });

  it('keeps at most 10 000 series points, doubling the interval on an even grid', async () => {
    const result = await simulate({
      picker: roundRobin(),
      shards: [{ id: 'only', latency: constant(10), capacity: 1 }],
      concurrency: 1,
      requests: 100, // 1 000 virtual ms, sampled every 0.01 ms: 100 000 points asked
      seed: 1,
      sampleEveryMs: 0.01,
    });
    const { t } = result.series;
    expect(t.length).toBeLessThanOrEqual(10_000);
    expect(t.length).toBeGreaterThan(5_000);
    const step = t[1]! - t[0]!;
    expect(step).toBeCloseTo(0.01 * 2 ** Math.round(Math.log2(step / 0.01)), 9);
    for (let i = 1; i < t.length; i++) expect(t[i]! - t[i - 1]!).toBeCloseTo(step, 6);
    expect(result.series.inFlight.only).toHaveLength(t.length);
  });

  it('open loop: requests arrive at the given rate on virtual time', async () => {
    const result = await simulate({
      picker: roundRobin(),
      shards: [
        { id: 'a', latency: 1 },
        { id: 'b', latency: 1 },
      ],
      arrivals: { rate: 1_000 },
      requests: 10_000,
      seed: 3,
    });
    // 10 000 exponential gaps of mean 1 ms: the sum is 10 000 ± 100 (1σ); allow 4σ.
    expect(Math.abs(result.durationMs - 10_000)).toBeLessThan(400);
    expect(result.perShard.map((s) => s.requests)).toEqual([5_000, 5_000]);
    expect(result.latency.p999).toBe(1);
  });

  it('a shard that goes down refuses at once (ECONNREFUSED) and its runs retry elsewhere', async () => {
    const errors: unknown[] = [];
    const result = await simulate({
      picker: roundRobin(),
      balancerOptions: {
        retry: {
          attempts: 2,
          budget: false,
          retryable: (e) => {
            errors.push(e);
            return true;
          },
        },
        health: false,
      },
      shards: [
        { id: 'up', latency: 5 },
        { id: 'down', latency: 5, schedule: [{ atMs: 0, down: true }] },
      ],
      concurrency: 2,
      requests: 100,
      seed: 1,
    });
    expect(result.failures).toBe(0);
    expect(result.retries).toBe(result.perShard[1]!.requests);
    expect(result.perShard[1]!.failures).toBe(result.perShard[1]!.requests);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => (e as { code?: string }).code === 'ECONNREFUSED')).toBe(true);
  });

  it('routes keys: a zipf hot key piles onto one shard of a hash ring, uniform keys do not', async () => {
    const run = (distribution: 'uniform' | 'zipf') =>
      simulate({
        picker: consistentHash(),
        shards: Array.from({ length: 8 }, (_, i) => ({ id: `s${i}`, latency: 1 })),
        concurrency: 8,
        requests: 20_000,
        keys: { count: 1_000, distribution, s: 1.1 },
        seed: 5,
      });
    const uniform = await run('uniform');
    const zipf = await run('zipf');
    // key-0 alone draws ~13 % of zipf traffic (1/H with s = 1.1 over 1 000 keys).
    expect(zipf.imbalance).toBeGreaterThan(uniform.imbalance + 0.3);
    expect(uniform.failures + zipf.failures).toBe(0);
  });

  it('validates its options with ConfigErrors naming the field', async () => {
    const base: SimulateOptions = { shards: [{ id: 'a', latency: 1 }], requests: 1, seed: 1 };
    const cases: [SimulateOptions, string][] = [
      [{ ...base, shards: [] }, 'shards'],
      [{ ...base, shards: [{ id: 'a' } as never] }, 'shards[0].latency'],
      [{ ...base, shards: [{ id: 'a', latency: -1 }] }, 'shards[0].latency'],
      [{ ...base, shards: [{ id: 'a', latency: 1, failureRate: 2 }] }, 'shards[0].failureRate'],
      [{ ...base, shards: [{ id: 'a', latency: 1, capacity: 0 }] }, 'shards[0].capacity'],
      [
        { ...base, shards: [{ id: 'a', latency: 1, schedule: [{ atMs: -1 }] }] },
        'shards[0].schedule[0].atMs',
      ],
      [{ ...base, arrivals: { rate: 0 } }, 'arrivals.rate'],
      [{ ...base, requests: 0 }, 'requests'],
      // Past what it can hold: a ConfigError before anything is allocated, not a RangeError.
      [{ ...base, requests: 1e12 }, 'requests'],
      [{ ...base, requests: MAX_SIMULATED_REQUESTS + 1 }, 'requests'],
      [{ ...base, keys: { count: 3e9 } }, 'keys.count'],
      [{ ...base, keys: { count: 1e12, distribution: 'zipf' } }, 'keys.count'],
      [{ ...base, seed: 1.5 }, 'seed'],
      [{ ...base, balancerOptions: { clock: {} } as never }, 'balancerOptions.clock'],
      [{ ...base, picker: consistentHash() }, 'keys'],
      [{ ...base, bogus: 1 } as never, 'bogus'],
    ];
    for (const [options, field] of cases) {
      const error = await simulate(options).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, field).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
  });
});

describe('balls in bins (n = 1 000 runs on n = 1 000 shards, all placed before any completes)', () => {
  const n = 1_000;
  const place = (picker: ReturnType<typeof random>, seed: number) =>
    simulate({
      picker,
      balancerOptions: { maxInFlightPerShard: Number.POSITIVE_INFINITY },
      shards: Array.from({ length: n }, (_, i) => ({ id: `s${i}`, latency: constant(1e6) })),
      concurrency: n, // every run is admitted at t = 0 and none settles before t = 1e6
      requests: n,
      seed,
      sampleEveryMs: 1e6,
    });

  it('random() reaches ~ln n / ln ln n, p2c() stays at ~ln ln n / ln 2 + O(1)', async () => {
    for (const seed of [1, 2, 3]) {
      const maxRandom = Math.max(
        ...(await place(random(), seed)).perShard.map((s) => s.maxInFlight),
      );
      const maxP2c = Math.max(...(await place(p2c(), seed)).perShard.map((s) => s.maxInFlight));
      // random: ln 1000 / ln ln 1000 ≈ 3.6 is the leading term; the expected number of bins with
      // ≥ 5 balls is n·P(Poisson(1) ≥ 5) ≈ 3.7, so max ≥ 5 holds with probability ≈ 97.5 %
      // (and for these seeds exactly). Max ≥ 9 would need P ≈ 1e-3.
      expect(maxRandom).toBeGreaterThanOrEqual(5);
      expect(maxRandom).toBeLessThanOrEqual(8);
      // p2c: ln ln 1000 / ln 2 ≈ 2.8 (Mitzenmacher / Azar et al.); observed 2–4, so ≤ 4.
      expect(maxP2c).toBeLessThanOrEqual(4);
      expect(maxP2c).toBeGreaterThanOrEqual(2);
      expect(maxP2c).toBeLessThan(maxRandom);
    }
  });
});

describe('a 10× slow shard among 8', () => {
  it("peakEwma's p99 is below roundRobin's at ~60 % load", async () => {
    // Each shard serves 4 at once; fast ones take 10 ms on average (400/s each), the slow one
    // 100 ms (40/s): capacity ≈ 7 × 400 + 40 = 2 840/s; arrivals at 1 700/s ≈ 60 %.
    const run = (picker: ReturnType<typeof roundRobin>) =>
      simulate({
        picker,
        shards: Array.from({ length: 8 }, (_, i) => ({
          id: `s${i}`,
          latency: exponential(i === 7 ? 100 : 10),
          capacity: 4,
        })),
        arrivals: { rate: 1_700 },
        requests: 20_000,
        seed: 11,
      });
    const rr = await run(roundRobin());
    const ewma = await run(peakEwma());
    expect(ewma.latency.p99).toBeLessThan(rr.latency.p99);
    expect(ewma.latency.p99 * 3).toBeLessThan(rr.latency.p99);
    expect(ewma.perShard[7]!.requests).toBeLessThan(rr.perShard[7]!.requests);
  });
});

describe('performance', () => {
  it('simulates 100k requests over 8 shards', { timeout: 120_000 }, async () => {
    const result = await simulate({
      picker: p2c(),
      shards: Array.from({ length: 8 }, (_, i) => ({
        id: `s${i}`,
        latency: lognormal(10, 0.6),
        capacity: 16,
      })),
      concurrency: 64,
      requests: 100_000,
      seed: 1,
    });
    expect(result.failures).toBe(0);
    expect(result.perShard.reduce((sum, s) => sum + s.requests, 0)).toBe(100_000);
    expect(result.durationMs).toBeGreaterThan(0);
  });
});

describe('simulate with a broken distribution', () => {
  it('rejects with an Error naming the shard and the distribution', async () => {
    const broken = { name: 'broken', sample: () => Number.NaN };
    await expect(
      simulate({ shards: [{ id: 'x', latency: broken }], requests: 3, seed: 1 }),
    ).rejects.toThrow(/distribution broken of shard "x" returned NaN/);
  });
});
