/**
 * Attacks on strict affinity's home lines: wake-ups that are lost.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, PushBackError } from '../../src/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

describe('strict keyed runs parked for push-back', () => {
  it('a longer second push-back does not strand the line: both runs go home when it ends', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'maglev' }),
      health: false,
    });
    const key = 'tenant-1';
    // Two runs on the home at once; the first is pushed back 100 ms, the second (at 60 ms, after the first parked) 500 ms.
    const r1 = track(
      balancer.run(
        (shard, ctx) =>
          ctx.attempt === 1
            ? failAfter(clock, 10, new PushBackError(100))
            : resolveAfter(clock, 1, `r1@${shard.id}`),
        { key, idempotent: true },
      ),
    );
    const r2 = track(
      balancer.run(
        (shard, ctx) =>
          ctx.attempt === 1
            ? failAfter(clock, 60, new PushBackError(500))
            : resolveAfter(clock, 1, `r2@${shard.id}`),
        { key, idempotent: true },
      ),
    );
    // The home's push-back ends at 560 ms; give it plenty of virtual time.
    await tick(clock, 5_000);
    const home = balancer.homeOf(key);
    expect({ r1: r1.value, r2: r2.value, settled: [r1.settled, r2.settled] }).toEqual({
      r1: `r1@${home}`,
      r2: `r2@${home}`,
      settled: [true, true],
    });
    expect(balancer.stats()).toMatchObject({ queued: 0, retrying: 0, inFlight: 0 });
    await balancer.close({ drain: false });
  });

  it('with a timeoutMs, the run is not failed with ShardUnavailableError after its home came back', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'maglev' }),
      health: false,
      timeoutMs: 3_000,
    });
    const key = 'tenant-1';
    const r1 = track(
      balancer.run(
        (_s, ctx) =>
          ctx.attempt === 1
            ? failAfter(clock, 10, new PushBackError(100))
            : resolveAfter(clock, 1, 'r1'),
        { key, idempotent: true },
      ),
    );
    const r2 = track(
      balancer.run(
        (_s, ctx) =>
          ctx.attempt === 1
            ? failAfter(clock, 60, new PushBackError(500))
            : resolveAfter(clock, 1, 'r2'),
        { key, idempotent: true },
      ),
    );
    await tick(clock, 4_000);
    expect([r1.value ?? String(r1.error), r2.value ?? String(r2.error)]).toEqual(['r1', 'r2']);
    await balancer.close({ drain: false });
  });
});

describe('strict keyed runs parked behind a capped home that then pushes back', () => {
  it('a run waiting for a slot on its home is served when the home’s push-back ends', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'maglev' }),
      maxInFlightPerShard: 1,
      retry: false,
      timeoutMs: 1_000,
    });
    const key = 'tenant-9';
    // The first run holds the home's only slot, then the home pushes back for 100 ms.
    const first = track(balancer.run(() => failAfter(clock, 10, new PushBackError(100)), { key }));
    // The second waits in the home's line for the slot (capped).
    const second = track(balancer.run((shard) => resolveAfter(clock, 1, shard.id), { key }));
    await tick(clock, 10);
    expect(first.error).toBeInstanceOf(PushBackError);
    expect(second.settled).toBe(false);
    // Push-back ends at 110 ms; the run's waits are bounded by timeoutMs (1 s) in any case.
    await tick(clock, 5_000);
    expect({ settled: second.settled, value: second.value, error: second.error }).toEqual({
      settled: true,
      value: balancer.homeOf(key),
      error: undefined,
    });
    expect(balancer.stats()).toMatchObject({ queued: 0, inFlight: 0 });
    await balancer.close({ drain: false });
  });

  it('drain() resolves once the home’s push-back is over (nothing is left waiting forever)', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'maglev' }),
      maxInFlightPerShard: 1,
      retry: false,
    });
    const key = 'tenant-9';
    track(balancer.run(() => failAfter(clock, 10, new PushBackError(100)), { key }));
    track(balancer.run((shard) => resolveAfter(clock, 1, shard.id), { key }));
    const drained = track(balancer.drain());
    await tick(clock, 60_000);
    expect({ drained: drained.settled, stats: balancer.stats() }).toMatchObject({
      drained: true,
      stats: { queued: 0, completed: 1, failed: 1 },
    });
    await balancer.close({ drain: false });
  });
});
