import { describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../src/base/types.js';
import { type RouteEvent, roundRobin } from '../../src/index.js';
import {
  flush,
  makeBalancer,
  recorded,
  resolveAfter,
  type TestBalancerOptions,
  tick,
  track,
} from '../helpers.js';

/** A round-robin balancer over `shards` on a manual clock, with `options` beside. */
function make(shards: ShardSpec<string>[], options: TestBalancerOptions<string> = {}) {
  const { clock, balancer } = makeBalancer({
    shards,
    picker: roundRobin(),
    ...options,
  });
  return { clock, balancer };
}

describe('membership changes re-evaluate waiting runs', () => {
  it('a run waiting on its only allowed (capped) shard starts at once when another shard gains the label', async () => {
    const { clock, balancer } = make(
      [
        { id: 'eu-1', target: 'a', labels: { region: 'eu' } },
        { id: 'us-1', target: 'b', labels: { region: 'us' } },
      ],
      { maxInFlightPerShard: 1 },
    );
    const routes: RouteEvent[] = [];
    balancer.on('route', (e) => routes.push(e));
    const first = track(
      balancer.run(() => resolveAfter(clock, 1000, 'x'), { require: { region: 'us' } }),
    );
    const second = track(balancer.run(async (s) => s.id, { require: { region: 'us' } }));
    await flush();
    expect(balancer.stats().queued).toBe(1);
    await balancer.setShards([
      { id: 'eu-1', target: 'a', labels: { region: 'us' } },
      { id: 'us-1', target: 'b', labels: { region: 'us' } },
    ]);
    await flush();
    expect(second.value).toBe('eu-1');
    await tick(clock, 1000);
    expect(first.value).toBe('x');
    await balancer.close();
  });

  it('a run held by a saturated tier 0 goes at once to a shard that joins tier 0 by a label change', async () => {
    const { clock, balancer } = make(
      [
        { id: 'op-1', target: 'a', labels: { site: 'onprem' } },
        { id: 'x-1', target: 'b', labels: { site: 'other' } },
        { id: 'cl-1', target: 'c', labels: { site: 'cloud' } },
      ],
      {
        prefer: [{ site: 'onprem' }, { site: 'cloud' }],
        spillAfterMs: 1_000,
        maxInFlightPerShard: 1,
      },
    );
    const routes = recorded(balancer, 'route');
    const first = track(balancer.run(() => resolveAfter(clock, 5000, 'x')));
    const second = track(balancer.run(async (s) => s.id));
    await flush();
    expect(routes.map((r) => r.shardId)).toEqual(['op-1']);
    await tick(clock, 10);
    await balancer.setShards([
      { id: 'op-1', target: 'a', labels: { site: 'onprem' } },
      { id: 'x-1', target: 'b', labels: { site: 'onprem' } },
      { id: 'cl-1', target: 'c', labels: { site: 'cloud' } },
    ]);
    await flush();
    expect(second.value).toBe('x-1');
    expect(routes[1]).toMatchObject({ shardId: 'x-1', tier: 0, reason: 'preferred' });
    expect(balancer.stats().tiers.map((t) => t.requests)).toEqual([2, 0, 0]);
    await tick(clock, 5000);
    expect(first.value).toBe('x');
    await balancer.close();
  });

  it('a shard losing its tier-0 label: the next run is routed by the new tiers (cache invalidated)', async () => {
    const { balancer } = make(
      [
        { id: 'op-1', target: 'a', labels: { site: 'onprem' } },
        { id: 'cl-1', target: 'c', labels: { site: 'cloud' } },
      ],
      { prefer: [{ site: 'onprem' }, { site: 'cloud' }] },
    );
    const routes = recorded(balancer, 'route');
    const rule = { site: ['onprem', 'cloud'] };
    expect(await balancer.run(async (s) => s.id, { require: rule })).toBe('op-1');
    expect(await balancer.run(async (s) => s.id)).toBe('op-1');
    await balancer.setShards([
      { id: 'op-1', target: 'a', labels: { site: 'cloud' } },
      { id: 'cl-1', target: 'c', labels: { site: 'onprem' } },
    ]);
    expect(await balancer.run(async (s) => s.id, { require: rule })).toBe('cl-1');
    expect(await balancer.run(async (s) => s.id)).toBe('cl-1');
    expect(routes.map((r) => [r.shardId, r.tier, r.reason])).toEqual([
      ['op-1', 0, 'preferred'],
      ['op-1', 0, 'preferred'],
      ['cl-1', 0, 'preferred'],
      ['cl-1', 0, 'preferred'],
    ]);
    await balancer.close();
  });

  it('a waiting run whose allowed shards all lose the label rejects with NoShardAvailableError', async () => {
    const { clock, balancer } = make(
      [
        { id: 'eu-1', target: 'a', labels: { region: 'eu' } },
        { id: 'us-1', target: 'b', labels: { region: 'us' } },
      ],
      { maxInFlightPerShard: 1 },
    );
    const first = track(
      balancer.run(() => resolveAfter(clock, 1000, 'x'), { require: { region: 'us' } }),
    );
    const second = track(balancer.run(async (s) => s.id, { require: { region: 'us' } }));
    await flush();
    await balancer.setShards([
      { id: 'eu-1', target: 'a', labels: { region: 'eu' } },
      { id: 'us-1', target: 'b', labels: { region: 'eu' } },
    ]);
    await flush();
    expect(second.settled).toBe(true);
    expect((second.error as Error)?.name).toBe('NoShardAvailableError');
    await tick(clock, 1000);
    expect(first.value).toBe('x');
    await balancer.close();
  });
});
