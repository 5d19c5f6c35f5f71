import { describe, expect, it } from 'vitest';
import type { ShardState } from '../../src/base/types.js';
import { type EjectEvent, PushBackError, type RestoreEvent, roundRobin } from '../../src/index.js';
import { RetryBudget } from '../../src/retry/budget.js';
import { ManualClock } from '../../src/testing/index.js';
import {
  flush,
  makeBalancer,
  resolveAfter,
  type TestBalancerOptions,
  tick,
  track,
} from '../helpers.js';

function make(options: TestBalancerOptions<string> = {}, ids = ['a', 'b']) {
  const { clock, balancer } = makeBalancer({ picker: roundRobin(), ...options }, ids);
  const ejects: EjectEvent[] = [];
  const restores: RestoreEvent[] = [];
  balancer.on('eject', (e) => ejects.push(e));
  balancer.on('restore', (e) => restores.push(e));
  return { clock, balancer, ejects, restores };
}

const only = (id: string) => ({
  name: `only-${id}`,
  pick: (shards: readonly ShardState[]) => shards.find((s) => s.id === id) ?? shards[0],
});

describe('retry budget arithmetic (pure)', () => {
  it('ratio 0.2, no floor: 10 runs fund exactly 2 retries', () => {
    const clock = new ManualClock();
    const b = new RetryBudget({ ratio: 0.2, minPerSecond: 0, ttlMs: 10_000 }, clock);
    for (let i = 0; i < 10; i++) b.deposit();
    expect([b.tryWithdraw(), b.tryWithdraw(), b.tryWithdraw()]).toEqual([true, true, false]);
  });
  it('floor only: minPerSecond 3 over 10 s allows exactly 30', () => {
    const clock = new ManualClock();
    const b = new RetryBudget({ ratio: 0, minPerSecond: 3, ttlMs: 10_000 }, clock);
    let n = 0;
    while (n < 100 && b.tryWithdraw()) n++;
    expect(n).toBe(30);
  });
  it('a run leaves the window whole with its bucket (0.9–1.0 × ttlMs)', () => {
    const clock = new ManualClock();
    const b = new RetryBudget({ ratio: 1, minPerSecond: 0, ttlMs: 10_000 }, clock);
    clock.advance(999);
    b.deposit(); // bucket [0, 1000)
    clock.advance(9_000); // t = 9999: still in the window
    expect(b.tryWithdraw()).toBe(true);
    const c = new RetryBudget({ ratio: 1, minPerSecond: 0, ttlMs: 10_000 }, clock);
    c.deposit(); // t = 9999 (bucket [9999, 10999) of c)
    clock.advance(9_001); // 19000: 9.001 s later, still within 0.9–1.0 × ttl
    expect(c.tryWithdraw()).toBe(true);
    expect(b.tryWithdraw()).toBe(false);
  });
});

describe('consecutive failures threshold, through the balancer', () => {
  it('N−1 failures do not eject, N do; a success in between resets the streak', async () => {
    const { clock, balancer, ejects } = make({
      picker: only('a'),
      retry: false,
      health: { consecutiveFailures: 3, failurePercent: false, maxEjectedPercent: 50 },
    });
    const fail = () => balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    const ok = () => balancer.run(() => Promise.resolve(1));
    await fail();
    await fail();
    await ok();
    await fail();
    await fail();
    expect(ejects).toHaveLength(0);
    await fail();
    expect(ejects.map((e) => [e.shardId, e.durationMs, e.ejections])).toEqual([['a', 30_000, 1]]);
    await balancer.close();
    void clock;
  });
});

describe('ejection growth, cap and probes', () => {
  it('each failed probe re-ejects for base × n, capped; a healthy spell of maxEjectionMs resets n', async () => {
    const { clock, balancer, ejects, restores } = make({
      picker: only('a'),
      retry: false,
      health: {
        consecutiveFailures: 1,
        failurePercent: false,
        baseEjectionMs: 1_000,
        maxEjectionMs: 2_500,
        maxEjectedPercent: 50,
        panicThreshold: 0,
      },
    });
    const fail = () => balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    await fail(); // eject 1: 1000
    await tick(clock, 1_000); // probing
    await fail(); // probe fails: 2000
    await tick(clock, 2_000);
    await fail(); // 3000 → capped 2500
    await tick(clock, 2_500);
    await fail(); // capped 2500
    expect(ejects.map((e) => e.durationMs)).toEqual([1_000, 2_000, 2_500, 2_500]);
    await tick(clock, 2_500);
    await balancer.run(() => Promise.resolve(1)); // probe succeeds
    expect(restores.at(-1)).toEqual({ shardId: 'a', phase: 'healthy' });
    await tick(clock, 2_500); // healthy spell of exactly maxEjectionMs
    await fail();
    expect(ejects.at(-1)!.durationMs).toBe(1_000);
    await balancer.close({ drain: false });
  });

  it('one probe at a time: a second run waits or goes elsewhere while the probe runs', async () => {
    const { clock, balancer } = make({
      picker: only('a'),
      retry: false,
      maxInFlightPerShard: 10,
      health: {
        consecutiveFailures: 1,
        failurePercent: false,
        baseEjectionMs: 1_000,
        maxEjectedPercent: 50,
        panicThreshold: 0,
      },
    });
    await balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    await tick(clock, 1_000);
    const onA: string[] = [];
    const runs = [0, 1, 2].map(() =>
      track(
        balancer.run((shard) => {
          onA.push(shard.id);
          return resolveAfter(clock, 100, shard.id);
        }),
      ),
    );
    await flush();
    expect(onA.filter((id) => id === 'a')).toHaveLength(1);
    await tick(clock, 1_000);
    expect(runs.every((r) => r.ok)).toBe(true);
    await balancer.close();
  });
});

describe('push-back', () => {
  it('a non-idempotent run pushed back by a goes to b after only its backoff; a is not ejected', async () => {
    const { clock, balancer, ejects } = make({
      retry: { attempts: 2, budget: false, backoff: { baseMs: 10, maxMs: 10 } },
      health: { consecutiveFailures: 1, maxEjectedPercent: 50 },
    });
    const seen: [string, number][] = [];
    const run = track(
      balancer.run((shard) => {
        seen.push([shard.id, clock.now()]);
        return shard.id === 'a' ? Promise.reject(new PushBackError(30_000)) : Promise.resolve('b');
      }),
    );
    await tick(clock, 20);
    expect(run.value).toBe('b');
    expect(seen[1]![1]).toBeLessThan(10);
    expect(ejects).toEqual([]);
    await balancer.close();
  });

  it('every shard pushes back exactly timeoutMs: the retry waits and then goes', async () => {
    const { clock, balancer } = make({ timeoutMs: 5_000, retry: { attempts: 3, budget: false } });
    let n = 0;
    const run = track(
      balancer.run(
        () => (++n <= 2 ? Promise.reject(new PushBackError(5_000)) : Promise.resolve('third')),
        { idempotent: true },
      ),
    );
    await tick(clock, 100);
    expect(run.settled).toBe(false);
    await tick(clock, 5_000);
    expect(run.value).toBe('third');
    await balancer.close();
  });
});
