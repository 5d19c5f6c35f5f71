import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError } from '../../src/index.js';
import { failAfter, flush, makeBalancer, recorded, resolveAfter, tick, track } from '../helpers.js';

const make = makeBalancer;

describe('saturated / ready events', () => {
  it('saturated is emitted once per crossing, not again when a retry backs off while queued = maxQueued', async () => {
    const { clock, balancer } = make(
      {
        maxInFlightPerShard: 1,
        maxQueued: 1,
        health: false,
        retry: { attempts: 2, budget: false },
      },
      ['a'],
    );
    const saturated = recorded(balancer, 'saturated');
    let first = true;
    const r1 = track(
      balancer.run(
        () => {
          if (first) {
            first = false;
            return failAfter(clock, 10, new Error('boom'));
          }
          return resolveAfter(clock, 10, 'r1');
        },
        { idempotent: true },
      ),
    );
    const r2 = track(balancer.run(() => resolveAfter(clock, 10, 'r2')));
    expect(balancer.stats().queued).toBe(1);
    expect(saturated).toHaveLength(1);
    await tick(clock, 10); // r1 fails and backs off; the queue never grew past 1
    await tick(clock, 200);
    expect(r1.ok).toBe(true);
    expect(r2.ok).toBe(true);
    // The queue reached maxQueued once.
    expect(saturated).toHaveLength(1);
  });

  it('ready is emitted when the queue falls below maxQueued after saturated, even with no ready() waiter', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1, maxQueued: 2 }, ['a']);
    const events: string[] = [];
    balancer.on('saturated', () => events.push('saturated'));
    balancer.on('ready', () => events.push('ready'));
    const runs = Array.from({ length: 3 }, (_, i) =>
      balancer.run(() => resolveAfter(clock, 10, i)),
    );
    expect(balancer.stats().queued).toBe(2);
    await tick(clock, 10);
    expect(balancer.stats().queued).toBe(1);
    await tick(clock, 30);
    await Promise.all(runs);
    // "The saturated and ready events mark the queue reaching maxQueued and falling below it."
    expect(events).toEqual(['saturated', 'ready']);
  });
});

describe('backoff vs timeoutMs', () => {
  it('a retry that can go to another shard waits its backoff, even when the backoff exceeds timeoutMs', async () => {
    const { clock, balancer } = make({
      timeoutMs: 20,
      health: false,
      random: () => 0.5,
      retry: { attempts: 2, backoff: { baseMs: 100, maxMs: 100 }, budget: false },
    });
    const shards: string[] = [];
    const run = track(
      balancer.run(
        (shard, ctx) => {
          shards.push(shard.id);
          return ctx.attempt === 1
            ? failAfter(clock, 1, new Error('boom'))
            : resolveAfter(clock, 1, 'ok');
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 500);
    if (run.ok === false) console.log('settled with:', (run.error as Error).message);
    expect(run.error).toBeUndefined();
    expect(run.value).toBe('ok');
    expect(shards).toHaveLength(2);
  });
});

describe('retry budget formula', () => {
  it('ratio 0.29 × 100 runs allows 29 retries (retries + 1 ≤ ratio × runs + floor)', async () => {
    const { clock, balancer } = make(
      {
        maxInFlightPerShard: 1000,
        maxQueued: 1000,
        health: false,
        random: () => 0,
        retry: {
          attempts: 2,
          backoff: { baseMs: 1, maxMs: 1 },
          budget: { ratio: 0.29, minPerSecond: 0, ttlMs: 10_000 },
        },
      },
      ['a', 'b'],
    );
    const outcomes = [];
    for (let i = 0; i < 100; i++) {
      const fails = i >= 70;
      outcomes.push(
        track(
          balancer.run(
            (_s, ctx) =>
              fails && ctx.attempt === 1
                ? failAfter(clock, 10, new Error('boom'))
                : resolveAfter(clock, 10, i),
            { idempotent: true },
          ),
        ),
      );
    }
    await tick(clock, 100);
    await flush();
    const stats = balancer.stats();
    expect(outcomes.every((o) => o.settled)).toBe(true);
    // 30 wanted a retry; the budget as documented allows 29 (28 + 1 ≤ 0.29 × 100 = 29).
    expect({ retries: stats.retries, budgetExhausted: stats.budgetExhausted }).toEqual({
      retries: 29,
      budgetExhausted: 1,
    });
    const refused = outcomes.filter((o) => o.ok === false);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.error).toBeInstanceOf(RetriesExhaustedError);
  });
});
