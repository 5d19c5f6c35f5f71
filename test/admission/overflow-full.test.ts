/**
 * Admission attacks: runs refused with QueueFullError although they would not queue at all, and
 * runs admitted without funding the retry budget.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/testing/index.js';
import { flush, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

function labelled(clock: ManualClock, extra: Record<string, unknown>) {
  return makeBalancer({
    clock,
    shards: [
      { id: 'a', target: 'a', labels: { region: 'eu' } },
      { id: 'b', target: 'b', labels: { region: 'us' } },
    ],
    maxInFlightPerShard: 1,
    ...extra,
  }).balancer;
}

describe('admission: a run that would start at once never meets QueueFullError', () => {
  it("overflow 'reject': a run for an idle shard is refused because runs bound to another shard fill the queue", async () => {
    const clock = new ManualClock();
    const balancer = labelled(clock, { maxQueued: 2, overflow: 'reject' });
    // one eu run on 'a', two more waiting for 'a' (queued = maxQueued); 'b' is idle
    for (let i = 0; i < 3; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    expect(balancer.stats().queued).toBe(2);
    expect(balancer.stats().shards.find((s) => s.id === 'b')!.inFlight).toBe(0);

    let called = false;
    const free = track(
      balancer.run(async (shard) => {
        called = true;
        return shard.id;
      }),
    );
    await flush();
    // docs/backpressure.md: "a run that would queue past maxQueued rejects at once" — this one
    // would not queue: with overflow 'wait' the same run starts on 'b' at once (next test).
    expect((free.error as Error | undefined)?.name).toBeUndefined();
    expect(called).toBe(true);
    expect(free.value).toBe('b');
    await tick(clock, 100);
    await balancer.close();
  });

  it("control: with overflow 'wait' the same run starts on the idle shard at once", async () => {
    const clock = new ManualClock();
    const balancer = labelled(clock, { maxQueued: 2, overflow: 'wait' });
    for (let i = 0; i < 3; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    const free = track(balancer.run(async (shard) => shard.id));
    await flush();
    expect(free.value).toBe('b');
    await tick(clock, 100);
    await balancer.close();
  });

  it('the hard ceiling (10 × maxQueued) refuses a run that would start at once on an idle shard', async () => {
    const clock = new ManualClock();
    const balancer = labelled(clock, { maxQueued: 1 }); // overflow 'wait', ceiling 10
    for (let i = 0; i < 11; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    expect(balancer.stats().queued).toBe(10);
    const free = track(balancer.run(async (shard) => shard.id));
    await flush();
    // docs/reference.md `maxQueued`: "at most 10 × maxQueued runs queue: past that run() rejects with
    // QueueFullError" — this run does not queue; shard 'b' is idle.
    expect((free.error as Error | undefined)?.message).toBeUndefined();
    expect(free.value).toBe('b');
    await tick(clock, 1_000);
    await balancer.close();
  });
});
