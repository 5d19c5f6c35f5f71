/**
 * The `spillAfterMs` wake-up outlives the run it was armed for. A run waits for a
 * saturated tier 0 (spillAfterMs: 1 h), gets a tier-0 slot a few ms later and finishes; the
 * balancer is closed. As test/routing/home-line-abort.test.ts holds for push-back wake-ups, a
 * timer still armed holds a Node process open (the system clock's timers are not background) —
 * here for the whole hour after close().
 */
import { describe, expect, it } from 'vitest';
import { flush, resolveAfter, tick, track } from '../helpers.js';
import { twoSites } from './tiers.js';

describe('spillAfterMs wake-up', () => {
  it('after the waiting run got its tier-0 slot and close() resolved, no timer of the balancer is left pending', async () => {
    const { clock, balancer } = twoSites({ spillAfterMs: 3_600_000, maxInFlightPerShard: 1 });
    const first = track(balancer.run(() => resolveAfter(clock, 10, 'first')));
    await flush();
    const second = track(balancer.run(async (shard) => shard.id));
    await tick(clock, 20);
    expect({ first: first.value, second: second.value }).toEqual({
      first: 'first',
      second: 'op-1',
    });
    await balancer.close();
    expect(balancer.stats()).toMatchObject({ queued: 0, retrying: 0, inFlight: 0, completed: 2 });
    expect({ pendingTimers: clock.pendingTimers, nextAt: clock.nextTimerAt() }).toEqual({
      pendingTimers: 0,
      nextAt: undefined,
    });
  });
});
