import { describe, expect, it } from 'vitest';
import { type Balancer, QueueFullError } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer, resolveAfter, shardsOf } from '../helpers.js';

interface Result {
  settled: number;
  ok: number;
  rejected: unknown[];
  peakQueued: number;
  peakPending: number;
  steps: number;
}

/**
 * A loader that awaits ready() before every run, against a driver that moves virtual time 1 ms at
 * a time (each task takes 1–3 ms of virtual time).
 */
async function load(
  total: number,
  overflow: 'wait' | 'reject',
): Promise<{ balancer: Balancer<string>; result: Result }> {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a', 'b', 'c', 'd']),
    maxInFlightPerShard: 8,
    maxQueued: 100,
    overflow,
    random: seededRandom(99),
  });
  const result: Result = {
    settled: 0,
    ok: 0,
    rejected: [],
    peakQueued: 0,
    peakPending: 0,
    steps: 0,
  };
  let loaderDone = false;
  const loader = (async () => {
    for (let i = 0; i < total; i++) {
      await balancer.ready();
      balancer
        .run(() => resolveAfter(clock, 1 + (i % 3), i))
        .then(
          () => {
            result.ok++;
            result.settled++;
          },
          (error: unknown) => {
            result.rejected.push(error);
            result.settled++;
          },
        );
      const { queued, inFlight } = balancer.stats();
      if (queued > result.peakQueued) result.peakQueued = queued;
      if (queued + inFlight > result.peakPending) result.peakPending = queued + inFlight;
    }
    loaderDone = true;
  })();
  while ((!loaderDone || result.settled < total) && result.steps < 10 * total) {
    await flush();
    clock.advance(1);
    result.steps++;
  }
  await loader;
  await balancer.drain();
  return { balancer, result };
}

describe('backpressure through ready()', () => {
  it("100k runs through maxQueued 100: queued never passes 100, and all settle ('wait')", async () => {
    const total = 100_000;
    const { balancer, result } = await load(total, 'wait');
    expect(result.settled).toBe(total);
    expect(result.ok).toBe(total);
    expect(result.rejected).toEqual([]);
    expect(result.peakQueued).toBeLessThanOrEqual(100);
    // the loader did fill the queue: backpressure, not an idle balancer, kept it there
    expect(result.peakQueued).toBe(100);
    // memory is bounded by counts: queued + in flight ≤ maxQueued + per-shard cap × shards
    expect(result.peakPending).toBeLessThanOrEqual(100 + 8 * 4);
    expect(result.peakPending).toBe(132);
    const stats = balancer.stats();
    expect(stats).toMatchObject({ completed: total, failed: 0, queued: 0, inFlight: 0 });
    expect(stats.shards.reduce((n, s) => n + s.requests, 0)).toBe(total);
    expect(stats.shards.every((s) => s.inFlight === 0)).toBe(true);
  });

  it("with overflow 'reject', a loader that awaits ready() is never refused (20k runs)", async () => {
    const total = 20_000;
    const { balancer, result } = await load(total, 'reject');
    expect(result.rejected.filter((e) => e instanceof QueueFullError)).toEqual([]);
    expect(result.rejected).toEqual([]);
    expect(result.ok).toBe(total);
    expect(result.peakQueued).toBe(100);
    expect(balancer.stats()).toMatchObject({ completed: total, queued: 0, inFlight: 0 });
  });

  it('a loader that ignores ready() would overrun the queue (the control)', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a']),
      maxInFlightPerShard: 1,
      maxQueued: 10,
    });
    const runs = Array.from({ length: 50 }, (_, i) =>
      balancer.run(() => resolveAfter(clock, 1, i)),
    );
    expect(balancer.stats().queued).toBe(49);
    for (let t = 0; t < 60; t++) {
      clock.advance(1);
      await flush();
    }
    expect((await Promise.all(runs)).length).toBe(50);
  });
});
