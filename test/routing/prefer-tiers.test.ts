import { describe, expect, it } from 'vitest';
import { Balancer, ConfigError, type RouteEvent, roundRobin } from '../../src/index.js';
import { seededRandom, simulate } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';

const shards = [
  { id: 'op-1', target: 1, labels: { site: 'onprem' } },
  { id: 'op-2', target: 2, labels: { site: 'onprem' } },
  { id: 'cl-1', target: 3, labels: { site: 'cloud' } },
];

describe('prefer: local-first tiers', () => {
  it('uses the first tier while it has room, spills when it is saturated past spillAfterMs', async () => {
    const { clock, balancer } = makeBalancer({
      shards,
      picker: roundRobin(),
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      spillAfterMs: 50,
      maxInFlightPerShard: 1,
      random: seededRandom(3),
    });
    const routes: RouteEvent[] = [];
    balancer.on('route', (event) => routes.push(event));
    const task = () => new Promise<void>((resolve) => clock.setTimer(resolve, 100));
    const runs = [balancer.run(task), balancer.run(task), balancer.run(task)];
    await flush();
    expect(routes.map((r) => [r.shardId, r.tier, r.reason])).toEqual([
      ['op-1', 0, 'preferred'],
      ['op-2', 0, 'preferred'],
    ]);
    expect(balancer.stats().queued).toBe(1);
    clock.advance(49);
    await flush();
    expect(routes).toHaveLength(2);
    clock.advance(1); // the third run has waited spillAfterMs: it spills
    await flush();
    expect(routes[2]).toMatchObject({ shardId: 'cl-1', tier: 1, reason: 'spill:saturated' });
    clock.advance(100);
    await Promise.all(runs);
    expect(balancer.stats().tiers.map((t) => t.requests)).toEqual([2, 1, 0]);
  });

  it('spills at once when the first tier is ejected, and comes back when it recovers', async () => {
    const { clock, balancer } = makeBalancer({
      shards,
      picker: roundRobin(),
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      health: {
        consecutiveFailures: 1,
        maxEjectedPercent: 100,
        panicThreshold: 0,
        baseEjectionMs: 1000,
      },
      retry: false,
      random: seededRandom(4),
    });
    const routes: RouteEvent[] = [];
    balancer.on('route', (event) => routes.push(event));
    const fail = async () => {
      throw new Error('down');
    };
    await balancer.run(fail).catch(() => undefined);
    await balancer.run(fail).catch(() => undefined);
    expect(
      balancer
        .stats()
        .shards.filter((s) => s.ejected)
        .map((s) => s.id),
    ).toEqual(['op-1', 'op-2']);
    const during = await balancer.run(async (shard) => shard.id);
    expect(during).toBe('cl-1');
    expect(routes.at(-1)).toMatchObject({ tier: 1, reason: 'spill:unhealthy' });
    clock.advance(1000); // ejections expire: probes go to the first tier again
    const after = await balancer.run(async (shard) => shard.id);
    expect(after.startsWith('op-')).toBe(true);
    expect(routes.at(-1)).toMatchObject({ tier: 0, reason: 'preferred' });
  });

  it('puts shards in no tier into a last one, and validates tiers at construction', async () => {
    const balancer = new Balancer({
      shards: [...shards, { id: 'x', target: 4, labels: { site: 'edge' } }],
      prefer: [{ site: 'onprem' }],
      random: seededRandom(5),
    });
    await balancer.run(async () => 1);
    expect(balancer.stats().tiers.map((t) => t.tier)).toEqual([0, 1]);
    expect(() => new Balancer({ shards, prefer: [{ rack: 'r1' }] })).toThrow(ConfigError);
    expect(() => new Balancer({ shards, prefer: [{ rack: 'r1' }] })).toThrow('prefer[0].rack');
    expect(() => new Balancer({ shards, prefer: [] })).toThrow('`prefer`');
    expect(() => new Balancer({ shards, prefer: [{ site: [] }] })).toThrow('prefer[0].site');
  });
});

describe('prefer on the simulator', () => {
  // On-prem tier: 2 shards × capacity 10 × 10 ms service = C = 2 000 requests/s. The cloud tier is
  // as large (the cap of 10 in flight per shard bounds it too). With the on-prem cap equal to its
  // capacity, a run spills only when on-prem is full.
  const fleet = [
    { id: 'op-1', latency: 10, capacity: 10, labels: { site: 'onprem' } },
    { id: 'op-2', latency: 10, capacity: 10, labels: { site: 'onprem' } },
    { id: 'cl-1', latency: 10, capacity: 1000, labels: { site: 'cloud' } },
    { id: 'cl-2', latency: 10, capacity: 1000, labels: { site: 'cloud' } },
  ];
  const options = (spillAfterMs: number) => ({
    prefer: [{ site: 'onprem' }, { site: 'cloud' }],
    spillAfterMs,
    maxInFlightPerShard: 10,
    health: false as const,
  });
  const cloudShare = (result: Awaited<ReturnType<typeof simulate>>) => {
    const by = Object.fromEntries(result.perShard.map((s) => [s.id, s.requests]));
    return (by['cl-1']! + by['cl-2']!) / result.perShard.reduce((sum, s) => sum + s.requests, 0);
  };

  it('sends nothing to the cloud below capacity and about a third at 1.5 C', async () => {
    const light = await simulate({
      shards: fleet,
      balancerOptions: options(5),
      arrivals: { rate: 1_000 },
      requests: 20_000,
      seed: 11,
    });
    expect(cloudShare(light)).toBe(0);
    const heavy = await simulate({
      shards: fleet,
      balancerOptions: options(5),
      arrivals: { rate: 3_000 },
      requests: 30_000,
      seed: 12,
    });
    // On-prem serves at most C = 2 000/s of the 3 000/s offered: the cloud takes ≈ 1/3.
    expect(cloudShare(heavy)).toBeGreaterThan(0.3);
    expect(cloudShare(heavy)).toBeLessThan(0.38);
  });

  it('spills everything while the on-prem tier is down, and takes it back when it recovers', async () => {
    const result = await simulate({
      shards: fleet.map((s) =>
        s.id.startsWith('op-')
          ? {
              ...s,
              schedule: [
                { atMs: 2_000, down: true },
                { atMs: 4_000, down: false },
              ],
            }
          : s,
      ),
      balancerOptions: {
        ...options(5),
        health: {
          consecutiveFailures: 3,
          baseEjectionMs: 500,
          maxEjectedPercent: 100,
          panicThreshold: 0,
        },
        retry: { attempts: 3, budget: false },
      },
      arrivals: { rate: 1_000 },
      requests: 8_000,
      seed: 13,
      sampleEveryMs: 50,
    });
    expect(result.failures).toBe(0);
    const { t, inFlight } = result.series;
    const at = (from: number, to: number, id: string) =>
      t.flatMap((time, i) => (time >= from && time < to ? [inFlight[id]![i]!] : []));
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    // Before the outage: on-prem only. During it: the cloud. Well after: on-prem again.
    expect(sum(at(500, 1_900, 'cl-1')) + sum(at(500, 1_900, 'cl-2'))).toBe(0);
    expect(sum(at(2_500, 3_900, 'op-1')) + sum(at(2_500, 3_900, 'op-2'))).toBe(0);
    expect(sum(at(2_500, 3_900, 'cl-1')) + sum(at(2_500, 3_900, 'cl-2'))).toBeGreaterThan(0);
    expect(sum(at(6_000, 8_000, 'op-1')) + sum(at(6_000, 8_000, 'op-2'))).toBeGreaterThan(0);
    expect(sum(at(6_000, 8_000, 'cl-1')) + sum(at(6_000, 8_000, 'cl-2'))).toBe(0);
  });
});
