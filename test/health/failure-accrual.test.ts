/**
 * Fast failures must repel traffic (issue 14), on the simulator's virtual time: 4 shards, 2
 * failing every call at once (0.5 ms), 2 healthy at 10 ms, 1 500 runs from 8 callers. Before
 * failure accrual, a fast 500 looked like a fast shard: Peak EWMA sent it 65 % of the runs.
 */
import { describe, expect, it } from 'vitest';
import { leastInFlight, type Picker, p2c, peakEwma } from '../../src/index.js';
import { constant, simulate } from '../../src/testing/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

const shards = [
  { id: 'bad-1', latency: constant(0.5), failureRate: 1 },
  { id: 'bad-2', latency: constant(0.5), failureRate: 1 },
  { id: 'ok-1', latency: constant(10) },
  { id: 'ok-2', latency: constant(10) },
];

async function run(picker: () => Picker, retries: boolean) {
  const result = await simulate({
    picker,
    shards,
    requests: 1_500,
    concurrency: 8,
    seed: 3,
    ...(retries ? {} : { balancerOptions: { retry: false } }),
  });
  const attempts = result.perShard.reduce((n, s) => n + s.requests, 0);
  const bad = result.perShard
    .filter((s) => s.id.startsWith('bad'))
    .reduce((n, s) => n + s.requests, 0);
  return { failed: result.failures / 1_500, badShare: bad / attempts };
}

describe('failure accrual: a shard that fails fast repels traffic', () => {
  for (const [name, picker] of [
    ['peakEwma', () => peakEwma()],
    ['p2c', () => p2c()],
    ['leastInFlight', () => leastInFlight()],
  ] as const) {
    it(`${name}: without retries ≤ 10 % of runs fail; with retries ≤ 1 %; the failing shards get ≤ 10 % of attempts`, async () => {
      const once = await run(picker, false);
      expect(once.failed).toBeLessThanOrEqual(0.1);
      expect(once.badShare).toBeLessThanOrEqual(0.1);
      const retried = await run(picker, true);
      expect(retried.failed).toBeLessThanOrEqual(0.01);
      expect(retried.badShare).toBeLessThanOrEqual(0.1);
    });
  }

  it('a failure is never a fast latency sample, and it multiplies the cost by the expected attempts per success', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a']),
      retry: false,
      health: false,
    });
    const ok = balancer.run(() => resolveAfter(clock, 20, 1));
    await tick(clock, 20);
    await ok;
    const a = balancer.shards[0]!;
    expect(a.rttMs).toBe(20);
    const failed = track(balancer.run(() => failAfter(clock, 1, new Error('500'))));
    await tick(clock, 1);
    expect(failed.ok).toBe(false);
    // The 1 ms failure did not pull the estimate down, nor let it decay from the success: it holds
    // the estimate where the success set it. The cost rose by 1 / (1 − 0.25).
    expect(a.rttMs).toBe(20);
    expect(a.cost).toBeCloseTo(a.rttMs * (1 / 0.75), 9);
    expect(a.load).toBeCloseTo(1 / 0.75 - 1, 9);
  });
});

describe('failure-percentage ejection (Envoy)', () => {
  it('ejects a shard failing half its calls though it never fails 5 in a row', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: { name: 'a-first', pick: (s) => s[0] },
      retry: false,
      health: { failureMinRequests: 20, failurePercent: 50, maxEjectedPercent: 50 },
    });
    const ejected: string[] = [];
    balancer.on('eject', (e) => ejected.push(e.shardId));
    // Fail, succeed, fail, … : never two failures in a row. The 21st call (a failure) is the first
    // with 20 calls in the window and half of them failed.
    for (let i = 0; i < 20; i++) {
      track(
        balancer.run(() =>
          i % 2 === 0 ? failAfter(clock, 1, new Error('x')) : resolveAfter(clock, 1, 1),
        ),
      );
      await tick(clock, 1);
    }
    expect(ejected).toEqual([]);
    track(balancer.run(() => failAfter(clock, 1, new Error('x'))));
    await tick(clock, 1);
    expect(ejected).toEqual(['a']);
  });

  it('the cap always allows one ejection: max(1, floor(n × maxEjectedPercent / 100))', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      picker: { name: 'all-fail', pick: (s) => s[0] },
      retry: false,
      health: { consecutiveFailures: 1, maxEjectedPercent: 10 },
    });
    const ejected: string[] = [];
    balancer.on('eject', (e) => ejected.push(e.shardId));
    for (let i = 0; i < 4; i++) {
      track(balancer.run(() => failAfter(clock, 1, new Error('x'))));
      await tick(clock, 1);
    }
    // 10 % of 4 shards is 0.4: one may still be ejected, and only one.
    expect(ejected).toEqual(['a']);
    expect(balancer.stats().shards.filter((s) => s.ejected)).toHaveLength(1);
  });
});
