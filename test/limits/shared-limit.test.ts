/**
 * docs/adaptive-limits.md: `maxInFlightPerShard` takes "a `ConcurrencyLimit` object (shared by
 * every shard unless it has a `clone()` method)". One shared limit is one cap: when it moves,
 * every shard that shares it is held to the new value, and stats() shows it.
 */
import { describe, expect, it } from 'vitest';
import type { ConcurrencyLimit, Picker } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { flush, makeBalancer, shardsOf, tick } from '../helpers.js';

describe('a ConcurrencyLimit shared by every shard', () => {
  it('holds every shard to the shared limit once it moved, not only the shard that sampled', async () => {
    const clock = new ManualClock();
    let value = 4;
    const shared: ConcurrencyLimit = {
      get limit() {
        return value;
      },
      onSample({ dropped }) {
        if (dropped) value = 1; // a drop anywhere: one call per shard from now on
      },
    };
    let want = 'a';
    const steer: Picker = {
      name: 'steer',
      pick: (shards) => shards.find((s) => s.id === want) ?? shards[0],
    };
    const { balancer } = makeBalancer({
      clock,
      shards: shardsOf(['a', 'b']),
      picker: steer,
      maxInFlightPerShard: shared,
      retry: false,
    });
    await balancer
      .run(async () => {
        throw new Error('shard fault');
      })
      .catch(() => undefined);
    expect(shared.limit).toBe(1);
    // The shared limit says 1: stats shows it for both shards.
    expect.soft(balancer.stats().shards.map((s) => [s.id, s.limit])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    // And b takes one call at a time, as a does.
    want = 'b';
    const runs = Array.from({ length: 3 }, () =>
      balancer.run(() => new Promise<void>((resolve) => clock.setTimer(resolve, 10))),
    );
    await flush();
    expect.soft(balancer.stats().shards.find((s) => s.id === 'b')!.inFlight).toBeLessThanOrEqual(1);
    await tick(clock, 50);
    await Promise.all(runs);
    await balancer.close();
  });
});
