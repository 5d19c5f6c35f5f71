/**
 * Attacks on the truth of the `failure` / `retry` events (docs/reference.md "### Events") and on the
 * owed retry of `removeShard({ drain: false })`.
 */
import { describe, expect, it } from 'vitest';
import {
  consistentHash,
  type FailureEvent,
  PushBackError,
  type RetryEvent,
  roundRobin,
} from '../../src/index.js';
import { failAfter, flush, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

function make(options: Record<string, unknown>, ids: string[]) {
  const { clock, balancer } = makeBalancer({ picker: roundRobin(), ...options }, ids);
  return { clock, balancer };
}

describe('retry.delayMs of a strict keyed run whose home pushes back', () => {
  it('the next attempt starts delayMs after the failure (as it does for an unkeyed run)', async () => {
    const { clock, balancer } = make({ picker: consistentHash() }, ['a', 'b']);
    const retries: { at: number; e: RetryEvent }[] = [];
    const picks: number[] = [];
    balancer.on('retry', (e) => retries.push({ at: clock.now(), e }));
    balancer.on('pick', () => picks.push(clock.now()));
    let n = 0;
    const run = track(
      balancer.run(
        () =>
          n++ === 0 ? failAfter(clock, 10, new PushBackError(500)) : resolveAfter(clock, 5, 'ok'),
        { idempotent: true, key: 'k' },
      ),
    );
    await tick(clock, 3_000);
    expect(run.value).toBe('ok');
    expect(retries).toHaveLength(1);
    expect(picks).toHaveLength(2);
    // docs/reference.md: `retry` — "a failed run tries again after `delayMs`".
    expect(picks[1]! - retries[0]!.at).toBeCloseTo(retries[0]!.e.delayMs, 6);
  });

  it('failure.willRetry / retry are not announced for a retry that never happens', async () => {
    const { clock, balancer } = make({ picker: consistentHash(), deliveryTimeoutMs: 200 }, [
      'a',
      'b',
    ]);
    const failures: FailureEvent[] = [];
    const retries: RetryEvent[] = [];
    let picks = 0;
    balancer.on('failure', (e) => failures.push(e));
    balancer.on('retry', (e) => retries.push(e));
    balancer.on('pick', () => picks++);
    const run = track(
      balancer.run(() => failAfter(clock, 10, new PushBackError(5_000)), {
        idempotent: true,
        key: 'k',
      }),
    );
    await tick(clock, 6_000);
    expect(run.settled).toBe(true);
    expect(picks).toBe(1); // no second attempt was ever made …
    // … yet the failure said it would retry, a `retry` was emitted and counted.
    expect({
      willRetry: failures.map((f) => f.willRetry),
      retryEvents: retries.length,
      statsRetries: balancer.stats().retries,
    }).toEqual({ willRetry: [false], retryEvents: 0, statsRetries: 0 });
  });
});

describe('removeShard({ drain: false }): the owed retry counts against retry.attempts', () => {
  it('a run whose attempt was ended by the removal still gets its `attempts` real tries', async () => {
    const { clock, balancer } = make({ retry: { attempts: 2 }, health: false }, ['a', 'b', 'c']);
    const failures: FailureEvent[] = [];
    const picked: string[] = [];
    balancer.on('failure', (e) => failures.push(e));
    balancer.on('pick', (e) => picked.push(e.shardId));
    const run = track(
      balancer.run(
        (s) =>
          s.id === 'a'
            ? resolveAfter(clock, 100, 'late')
            : s.id === 'b'
              ? failAfter(clock, 10, new Error('down'))
              : resolveAfter(clock, 10, 'ok'),
        { idempotent: true },
      ),
    );
    await flush();
    void balancer.removeShard('a', { drain: false });
    await tick(clock, 1_000);
    // Attempt 1 (a) was ended by the balancer: owed. Attempt on b is the first of the run's own
    // 2 attempts; its failure must be retried (on c).
    expect(failures.map((f) => [f.shardId, f.willRetry])).toEqual([
      ['a', true],
      ['b', true],
    ]);
    expect(picked).toEqual(['a', 'b', 'c']);
    expect(run.value).toBe('ok');
    await balancer.close();
  });
});
