/**
 * "Push-back ... never delays a retry elsewhere" (DESIGN, second round).
 */
import { describe, expect, it } from 'vitest';
import { PushBackError, roundRobin } from '../../src/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

describe('a retry is not held by the push-back of a shard it need not use', () => {
  it('a retry after a plain failure on A is not settled or delayed because only B pushes back', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: roundRobin(),
      timeoutMs: 1_000,
      health: false,
      retry: { attempts: 3 },
    });
    // B pushes back for a minute (the run that hit it went on to A).
    const warm1 = track(balancer.run((s) => resolveAfter(clock, 1, s.id), { idempotent: true }));
    const warm2 = track(
      balancer.run(
        (s) =>
          s.id === 'b'
            ? failAfter(clock, 1, new PushBackError(60_000))
            : resolveAfter(clock, 1, s.id),
        { idempotent: true },
      ),
    );
    await tick(clock, 100);
    expect([warm1.value, warm2.value]).toEqual(['a', 'a']);
    // Now a run fails once on A (a 500): A is fine again right after, B still pushes back.
    const tried: string[] = [];
    const run = track(
      balancer.run(
        (s, ctx) => {
          tried.push(s.id);
          return ctx.attempt === 1
            ? failAfter(clock, 1, new Error('500'))
            : resolveAfter(clock, 1, s.id);
        },
        { idempotent: true },
      ),
    );
    const startedAt = clock.now();
    await tick(clock, 200);
    expect({
      tried,
      value: run.value,
      error: run.error === undefined ? undefined : String(run.error),
    }).toEqual({
      tried: ['a', 'a'],
      value: 'a',
      error: undefined,
    });
    expect(clock.now() - startedAt).toBeLessThan(1_000);
    await balancer.close({ drain: false });
  });

  it('without a timeoutMs, the retry on A waits its backoff, not B’s minute of push-back', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: roundRobin(),
      health: false,
      retry: { attempts: 3 },
    });
    const delays: number[] = [];
    balancer.on('retry', (e) => delays.push(e.delayMs));
    track(balancer.run((s) => resolveAfter(clock, 1, s.id), { idempotent: true }));
    track(
      balancer.run(
        (s) =>
          s.id === 'b'
            ? failAfter(clock, 1, new PushBackError(60_000))
            : resolveAfter(clock, 1, s.id),
        { idempotent: true },
      ),
    );
    await tick(clock, 100);
    delays.length = 0;
    const run = track(
      balancer.run(
        (s, ctx) =>
          ctx.attempt === 1 ? failAfter(clock, 1, new Error('500')) : resolveAfter(clock, 1, s.id),
        { idempotent: true },
      ),
    );
    await tick(clock, 200);
    expect({ delays: delays.map((d) => d < 50), value: run.value }).toEqual({
      delays: [true],
      value: 'a',
    });
    await balancer.close({ drain: false });
  });
});
