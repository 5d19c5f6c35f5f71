import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError, type RetryEvent, roundRobin } from '../../src/index.js';
import { resolveRetryOptions } from '../../src/retry/options.js';
import { decideRetry } from '../../src/retry/policy.js';
import {
  failAfter,
  flush,
  makeBalancer,
  type TestBalancerOptions,
  tick,
  track,
} from '../helpers.js';

function make(options: TestBalancerOptions<string> = {}, ids = ['a', 'b', 'c']) {
  return makeBalancer({ picker: roundRobin(), ...options }, ids);
}

describe('backoff bounds', () => {
  // docs/reference.md `retry`: "The wait before retry n is uniform in [0, min(maxMs, baseMs × 2^(n−1)))";
  // "a `maxMs` given below the default `baseMs` lowers it (`backoff: { maxMs: 10 }` is valid)".
  it('backoff: { maxMs: 0 } (no backoff) never yields a NaN delay, whatever the attempt', () => {
    const retry = resolveRetryOptions({ attempts: 5_000, backoff: { maxMs: 0 }, budget: false });
    if (retry === false) throw new Error('unreachable');
    const delays: number[] = [];
    for (const attempt of [1, 2, 1_024, 1_025, 1_026, 4_000]) {
      const d = decideRetry(
        {
          retryable: true,
          error: new Error('x'),
          attempt,
          idempotent: true,
          aborted: false,
          pushBackWaitMs: 0,
          deadlineLeftMs: Number.POSITIVE_INFINITY,
        },
        retry,
        undefined,
        () => 0.5,
      );
      if (d.retry) delays.push(d.delayMs);
    }
    expect(delays).toHaveLength(6);
    for (const d of delays) {
      expect(Number.isNaN(d)).toBe(false);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(0);
    }
  });

  it('the retry event never reports delayMs NaN (many shards, maxMs 0, long run)', async () => {
    const ids = Array.from({ length: 1_030 }, (_, i) => `s${i}`);
    const { clock, balancer } = make(
      {
        health: false,
        maxInFlightPerShard: 1,
        retry: { attempts: 1_030, budget: false, backoff: { maxMs: 0 } },
      },
      ids,
    );
    const bad: RetryEvent[] = [];
    balancer.on('retry', (e) => {
      if (!(e.delayMs >= 0)) bad.push(e);
    });
    const run = track(
      balancer.run(
        (_shard, ctx) =>
          ctx.attempt >= 1_030 ? Promise.resolve('ok') : Promise.reject(new Error('down')),
        { idempotent: true },
      ),
    );
    for (let i = 0; i < 3_000 && !run.settled && bad.length === 0; i++) {
      clock.advance(1);
      await flush();
    }
    expect(bad.map((e) => ({ attempt: e.attempt, delayMs: e.delayMs }))).toEqual([]);
    expect(run.value).toBe('ok');
    await balancer.close();
  });
});

describe('causes with a cycle', () => {
  // docs/reference.md `run`: "settles exactly once"; docs/retries-and-health.md: provesNotSent looks
  // "also through its `cause`".
  it('a non-idempotent run whose error has a cyclic cause chain still settles', async () => {
    const { clock, balancer } = make({ health: false, retry: { budget: false } });
    const a = new Error('outer');
    const b = new Error('inner', { cause: a });
    (a as { cause?: unknown }).cause = b;
    const run = track(balancer.run(() => Promise.reject(a)));
    await tick(clock, 10);
    for (let i = 0; i < 20; i++) await flush();
    expect(run.settled).toBe(true);
    expect(run.error).toBe(a);
    expect(balancer.stats().inFlight).toBe(0);
    await balancer.close({ drain: false });
  });
});

describe('RetriesExhaustedError records', () => {
  it('attempts lists every attempt in order, cause is the last error', async () => {
    const { clock, balancer } = make({
      health: false,
      retry: { attempts: 3, budget: false, backoff: { baseMs: 10, maxMs: 10 } },
    });
    const errors = ['a', 'b', 'c'].map((id) => new Error(`fail ${id}`));
    const run = track(
      balancer.run((shard) => failAfter(clock, 5, errors[['a', 'b', 'c'].indexOf(shard.id)]), {
        idempotent: true,
      }),
    );
    for (let i = 0; i < 100 && !run.settled; i++) await tick(clock, 1);
    const error = run.error as RetriesExhaustedError;
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    const ids = error.attempts.map((r) => r.shardId);
    expect([...ids].sort()).toEqual(['a', 'b', 'c']);
    expect(error.attempts.map((r) => r.error)).toEqual(
      ids.map((id) => errors[['a', 'b', 'c'].indexOf(id)]),
    );
    expect(error.cause).toBe(error.attempts[2]!.error);
    for (const r of error.attempts) expect(r.elapsedMs).toBeGreaterThanOrEqual(5);
    await balancer.close();
  });
});
