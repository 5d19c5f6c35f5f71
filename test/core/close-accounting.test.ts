/**
 * Settlement accounting under close() and overflow.
 */
import { describe, expect, it } from 'vitest';
import { BalancerClosedError, consistentHash, QueueFullError } from '../../src/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

describe('close and overflow accounting', () => {
  it('close({ timeoutMs }) settles runs parked in home lines, queued, backing off and running; figures return to 0', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'maglev' }),
      maxInFlightPerShard: 1,
      retry: { attempts: 5, backoff: { baseMs: 10_000, maxMs: 10_000 } },
    });
    const runs = [] as ReturnType<typeof track>[];
    for (let i = 0; i < 12; i++) {
      runs.push(
        track(
          balancer.run(
            (s, ctx) =>
              i % 3 === 0 && ctx.attempt === 1
                ? failAfter(clock, 5, new Error('x'))
                : resolveAfter(clock, 100_000, s.id),
            { key: `k${i}`, idempotent: true },
          ),
        ),
      );
    }
    await tick(clock, 10);
    const closed = track(balancer.close({ timeoutMs: 50 }));
    await tick(clock, 100);
    expect(closed.settled).toBe(true);
    expect(runs.every((r) => r.settled && r.count === 1)).toBe(true);
    const st = balancer.stats();
    expect(st).toMatchObject({ queued: 0, retrying: 0, inFlight: 0 });
    expect(st.completed + st.failed + st.refused).toBe(12);
    expect(runs.filter((r) => r.error instanceof BalancerClosedError).length).toBe(
      12 - st.completed,
    );
  });

  it("overflow 'reject': a keyed run that would park behind a full queue is refused, counted once", async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: consistentHash({ algorithm: 'ring' }),
      maxInFlightPerShard: 1,
      maxQueued: 1,
      overflow: 'reject',
    });
    const key = 'k';
    const a = track(balancer.run(() => resolveAfter(clock, 10, 1), { key }));
    const b = track(balancer.run(() => resolveAfter(clock, 10, 2), { key }));
    const c = track(balancer.run(() => resolveAfter(clock, 10, 3), { key }));
    await tick(clock, 1);
    expect(c.error).toBeInstanceOf(QueueFullError);
    await tick(clock, 100);
    expect([a.value, b.value]).toEqual([1, 2]);
    expect(balancer.stats()).toMatchObject({ completed: 2, failed: 0, refused: 1, queued: 0 });
  });
});
