/**
 * Attacks on membership changes at run time.
 */
import { describe, expect, it } from 'vitest';
import { aimd, consistentHash, roundRobin, ShardRemovedError } from '../../src/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

describe('remove and re-add with the same id while old attempts run', () => {
  it('in-flight figures stay per object and return to 0; removal resolves', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: roundRobin(),
      maxInFlightPerShard: aimd({ initial: 2, max: 4 }),
    });
    const r1 = track(balancer.run((s) => resolveAfter(clock, 100, s.id)));
    const r2 = track(balancer.run((s) => resolveAfter(clock, 100, s.id)));
    const r3 = track(balancer.run((s) => resolveAfter(clock, 100, s.id)));
    const removed = track(balancer.removeShard('a'));
    balancer.addShard({ id: 'a', target: 'a' });
    expect(balancer.stats().shards.find((s) => s.id === 'a')!.inFlight).toBe(0);
    const r4 = track(balancer.run((s) => resolveAfter(clock, 10, s.id)));
    const r5 = track(balancer.run((s) => resolveAfter(clock, 10, s.id)));
    await tick(clock, 200);
    expect([r1, r2, r3, r4, r5].map((r) => r.ok)).toEqual([true, true, true, true, true]);
    expect(removed.settled).toBe(true);
    const st = balancer.stats();
    expect(st.inFlight).toBe(0);
    expect(st.shards.map((s) => s.inFlight)).toEqual([0, 0]);
    expect(st.completed).toBe(5);
  });

  it('removeShard without drain while a strict keyed run is in flight on its home: it retries on its new home', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'ring' }),
    });
    const key = 'k1';
    const home = balancer.homeOf(key)!;
    const tried: string[] = [];
    const run = track(
      balancer.run(
        (s) => {
          tried.push(s.id);
          return resolveAfter(clock, 100, s.id);
        },
        { key, idempotent: true },
      ),
    );
    await tick(clock, 10);
    await balancer.removeShard(home, { drain: false });
    const newHome = balancer.homeOf(key)!;
    await tick(clock, 500);
    expect(tried).toEqual([home, newHome]);
    expect(run.value).toBe(newHome);
    expect(balancer.stats()).toMatchObject({ inFlight: 0, queued: 0, retrying: 0, completed: 1 });
  });

  it('a strict keyed run waiting for its ejected home follows the key when the whole fleet is replaced', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      picker: consistentHash({ algorithm: 'maglev' }),
      retry: false,
      health: { consecutiveFailures: 1, baseEjectionMs: 60_000, maxEjectedPercent: 50 },
    });
    const key = 'k7';
    track(balancer.run(() => failAfter(clock, 1, new Error('x')), { key }));
    await tick(clock, 1);
    const waiting = track(balancer.run((s) => resolveAfter(clock, 1, s.id), { key }));
    await tick(clock, 10);
    expect(waiting.settled).toBe(false);
    const done = track(balancer.setShards(shardsOf(['x', 'y'])));
    await tick(clock, 10);
    expect(waiting.value).toBe(balancer.homeOf(key));
    expect(done.settled).toBe(true);
    expect(balancer.stats()).toMatchObject({ queued: 0, inFlight: 0, panic: false });
  });

  it('non-idempotent run aborted by removal without drain rejects with ShardRemovedError once', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: roundRobin(),
    });
    const run = track(balancer.run((s) => resolveAfter(clock, 100, s.id)));
    await tick(clock, 1);
    await balancer.removeShard('a', { drain: false });
    await tick(clock, 200);
    expect(run.error).toBeInstanceOf(ShardRemovedError);
    expect(run.count).toBe(1);
    const st = balancer.stats();
    expect(st.completed + st.failed + st.refused).toBe(1);
  });
});
