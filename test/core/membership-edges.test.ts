/**
 * Attacks on membership and lifecycle promises of the core Balancer.
 */
import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

describe('removeShard without drain: idempotent runs retry elsewhere', () => {
  it('every idempotent run aborted by the removal succeeds on the remaining shard (none lost to the retry budget)', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: roundRobin(),
      random: seededRandom(7),
      maxInFlightPerShard: 1_000,
      maxInFlight: 10_000,
    });
    const N = 400;
    const runs = Array.from({ length: N }, () =>
      track(balancer.run((s) => resolveAfter(clock, 100, s.id), { idempotent: true })),
    );
    await tick(clock, 10);
    expect(balancer.stats().shards.map((s) => s.inFlight)).toEqual([200, 200]);
    await balancer.removeShard('a', { drain: false });
    await tick(clock, 5_000);
    const failed = runs.filter((r) => r.ok === false);
    const st = balancer.stats();
    expect({
      failed: failed.length,
      budgetExhausted: st.budgetExhausted,
      firstError: (failed[0]?.error as Error | undefined)?.name,
    }).toEqual({
      failed: 0,
      budgetExhausted: 0,
      firstError: undefined,
    });
    expect(runs.every((r) => r.value === 'b')).toBe(true);
  });
});

describe('health events of a removed shard', () => {
  it('a probe that succeeds on a shard removed while it ran emits no restore for it', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      // The first shard offered: a whenever it may be offered.
      picker: { name: 'first', pick: (shards) => shards[0] },
      retry: false,
      health: { consecutiveFailures: 1, baseEjectionMs: 1_000, maxEjectedPercent: 50 },
    });
    const events: string[] = [];
    balancer.on('eject', (e) => events.push(`eject ${e.shardId}`));
    balancer.on('restore', (e) => events.push(`restore ${e.shardId} ${e.phase}`));
    balancer.on('shardRemoved', (e) => events.push(`removed ${e.shardId}`));
    balancer.on('shardAdded', (e) => events.push(`added ${e.shardId}`));
    // a fails once: ejected.
    track(balancer.run(() => failAfter(clock, 1, new Error('boom'))));
    await tick(clock, 1);
    expect(events).toEqual(['eject a']);
    await tick(clock, 1_000); // probe phase
    expect(events).toEqual(['eject a', 'restore a probe']);
    // The probe call goes to a, and is held.
    const onA: string[] = [];
    const probe = track(
      balancer.run((s) => {
        onA.push(s.id);
        return resolveAfter(clock, 50, s.id);
      }),
    );
    await tick(clock, 1);
    expect(onA).toEqual(['a']);
    const removal = track(balancer.removeShard('a'));
    // A fresh shard takes the id while the old one drains (a pod back at the same address).
    balancer.addShard({ id: 'a', target: 'a' });
    await tick(clock, 100);
    expect(probe.value).toBe('a');
    expect(removal.ok).toBe(true);
    // The old a is gone and the new a was never ejected: no health event after the removal.
    expect(events).toEqual(['eject a', 'restore a probe', 'removed a', 'added a']);
  });
});

describe('re-entrancy: membership change from a pick listener', () => {
  it('a shard removed without drain by a pick listener never has fn called on it afterwards', async () => {
    const { clock, balancer } = makeBalancer({ picker: roundRobin(), random: seededRandom(3) });
    let removedAt = -1;
    const calls: { shard: string; afterRemoval: boolean; aborted: boolean }[] = [];
    let n = 0;
    balancer.on('pick', (e) => {
      if (e.shardId === 'a' && removedAt < 0) {
        removedAt = n;
        void balancer.removeShard('a', { drain: false });
      }
    });
    const run = track(
      balancer.run(
        (s, ctx) => {
          calls.push({ shard: s.id, afterRemoval: removedAt >= 0, aborted: ctx.signal.aborted });
          n++;
          return resolveAfter(clock, 10, s.id);
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 1_000);
    expect(run.value).toBe('b');
    expect(calls).toEqual([{ shard: 'b', afterRemoval: true, aborted: false }]);
  });

  it('a non-idempotent run that rejects with ShardRemovedError never has its fn called', async () => {
    const { clock, balancer } = makeBalancer({ picker: roundRobin(), random: seededRandom(3) });
    const log: string[] = [];
    balancer.on('pick', (e) => {
      if (e.shardId === 'a') void balancer.removeShard('a', { drain: false });
    });
    const run = balancer.run((s) => {
      log.push(`fn on ${s.id}`);
      return resolveAfter(clock, 10, s.id);
    });
    run.catch((error: Error) => log.push(`rejected ${error.name}`));
    await tick(clock, 100);
    // The caller is told the write did not happen (ShardRemovedError): it must not happen at all.
    expect(log).toEqual(['rejected ShardRemovedError']);
  });
});

describe('setShards diffs by id', () => {
  it('a staying id whose target is an equal but fresh object (re-read config) keeps its figures', async () => {
    const config = () => [
      { id: 'a', target: { url: 'http://10.0.0.1:8080' } },
      { id: 'b', target: { url: 'http://10.0.0.2:8080' } },
    ];
    const { clock, balancer } = makeBalancer({
      shards: config(),
      picker: roundRobin(),
    });
    const events: string[] = [];
    balancer.on('shardRemoved', (e) => events.push(`removed ${e.shardId}`));
    balancer.on('shardAdded', (e) => events.push(`added ${e.shardId}`));
    const runs = [0, 1, 2, 3].map(() => balancer.run((s) => resolveAfter(clock, 40, s.id)));
    await tick(clock, 50);
    await Promise.all(runs);
    const a = balancer.shards[0];
    // The loader re-reads its shard list (same ids, same URLs) and bumps a's weight.
    const specs = config().map((spec, i) => (i === 0 ? { ...spec, weight: 3 } : spec));
    await balancer.setShards(specs);
    expect(balancer.shards[0]!.weight).toBe(3);
    expect({
      events,
      sameObject: balancer.shards[0] === a,
      requests: balancer.stats().shards.map((s) => [s.id, s.requests]),
    }).toEqual({
      events: [],
      sameObject: true,
      requests: [
        ['a', 2],
        ['b', 2],
      ],
    });
  });

  it('a target whose data changed, or an equal class instance, is a new shard', async () => {
    class Endpoint {
      constructor(readonly url: string) {}
    }
    const { balancer } = makeBalancer<unknown>({
      shards: [
        { id: 'a', target: { url: 'http://10.0.0.1:8080', tags: ['x'] } },
        { id: 'b', target: new Endpoint('http://10.0.0.2:8080') },
      ],
      picker: roundRobin(),
    });
    const events: string[] = [];
    balancer.on('shardRemoved', (e) => events.push(`removed ${e.shardId}`));
    balancer.on('shardAdded', (e) => events.push(`added ${e.shardId}`));
    await balancer.setShards([
      { id: 'a', target: { url: 'http://10.0.0.1:8080', tags: ['y'] } },
      { id: 'b', target: new Endpoint('http://10.0.0.2:8080') },
    ]);
    expect(events).toEqual(['removed a', 'removed b', 'added a', 'added b']);
  });
});
