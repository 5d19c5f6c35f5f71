import { describe, expect, it } from 'vitest';
import type { Picker } from '../../src/base/types.js';
import { p2c, peakEwma, roundRobin } from '../../src/pickers/index.js';
import { constant, simulate } from '../../src/testing/index.js';

/**
 * The black-hole setup of fast-failures.test.ts on the simulator's virtual time, where the
 * figures are exact by seed: two shards fail every call after 1 ms, two answer in 10 ms, eight
 * callers, 1,500 measured runs after a 300-run warm-up. Tells a core regression (here) from a
 * transport one (only on real sockets). Without retries every failed attempt fails its run, as
 * a non-idempotent run's would.
 */
const shards = [
  { id: 'bad-1', latency: constant(1), failureRate: 1 },
  { id: 'bad-2', latency: constant(1), failureRate: 1 },
  { id: 'ok-1', latency: constant(10) },
  { id: 'ok-2', latency: constant(10) },
];

async function run(picker: Picker, retry: boolean) {
  const result = await simulate({
    picker,
    shards,
    requests: 1_500,
    warmupRequests: 300,
    concurrency: 8,
    seed: 14,
    balancerOptions: retry ? {} : { retry: false },
  });
  const attempts = result.perShard.reduce((n, s) => n + s.requests, 0);
  const onBad = result.perShard
    .filter((s) => s.id.startsWith('bad'))
    .reduce((n, s) => n + s.requests, 0);
  return { failures: result.failures, attempts, onBad };
}

describe('shards that fail fast repel traffic (virtual time)', () => {
  it.each([
    ['peakEwma', () => peakEwma()],
    ['p2c', () => p2c()],
  ])(
    '%s: ≤ 10 % failed without retries, ≤ 1 % with, ≤ 10 % of attempts on the failing shards',
    async (_name, make) => {
      const once = await run(make(), false);
      expect(once.failures).toBeLessThanOrEqual(150);
      expect(once.onBad).toBeLessThanOrEqual(once.attempts * 0.1);
      const retried = await run(make(), true);
      expect(retried.failures).toBeLessThanOrEqual(15);
      expect(retried.onBad).toBeLessThanOrEqual(retried.attempts * 0.1);
    },
  );

  it('round robin, blind to failures, is the control: a third of its runs fail (one failing shard ejected, the other not)', async () => {
    const once = await run(roundRobin(), false);
    expect(once.failures).toBeGreaterThan(300);
  });
});
