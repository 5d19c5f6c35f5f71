/**
 * Red-team attacks: governance audit (tiers, labels) and keyed runs across label changes.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, roundRobin } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { keyHomedOn, makeBalancer, recorded, resolveAfter, tick, track } from '../helpers.js';

describe('stats().labels and zone', () => {
  it('zone counts as a label for rules, and its attempts are counted in stats().labels.zone', async () => {
    const { balancer } = makeBalancer({
      shards: [
        { id: 'a', target: 'a', zone: 'z1' },
        { id: 'b', target: 'b', zone: 'z2' },
      ],
      picker: roundRobin(),
      random: undefined,
    });
    for (let i = 0; i < 3; i++) {
      expect(await balancer.run(async (s) => s.id, { require: { zone: 'z1' }, bytes: 10 })).toBe(
        'a',
      );
    }
    expect(balancer.stats().labels.zone?.z1).toEqual({ requests: 3, bytes: 30 });
  });
});

describe('stats().tiers with keyed runs', () => {
  it('tier counts add up to every attempt, keyed strict runs included', async () => {
    const { balancer } = makeBalancer({
      shards: [
        { id: 'r1', target: 'r1', labels: { site: 'onprem' } },
        { id: 'r2', target: 'r2', labels: { site: 'onprem' } },
        { id: 'c1', target: 'c1', labels: { site: 'cloud' } },
        { id: 'x', target: 'x' },
      ],
      picker: consistentHash(),
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      random: seededRandom(2),
    });
    const routes = recorded(balancer, 'route');
    for (let i = 0; i < 60; i++) await balancer.run(async (s) => s.id, { key: `k${i}` });
    const s = balancer.stats();
    expect(s.tiers.reduce((n, t) => n + t.requests, 0)).toBe(60);
    const byTier = [0, 0, 0];
    for (const r of routes) byTier[r.tier!]!++;
    expect(s.tiers.map((t) => t.requests)).toEqual(byTier);
  });
});

describe('strict keyed runs with rules across label changes', () => {
  it('a parked strict keyed run never reaches a shard that stopped satisfying its rule', async () => {
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'a', target: 'a', labels: { region: 'eu' } },
        { id: 'b', target: 'b', labels: { region: 'eu' } },
        { id: 'c', target: 'c', labels: { region: 'us' } },
      ],
      picker: consistentHash({ algorithm: 'rendezvous' }),
      maxInFlightPerShard: 1,
      random: seededRandom(2),
    });
    const rule = { region: 'eu' };
    const key = keyHomedOn(balancer, 'a');
    const ranOn: [string, string][] = [];
    const hold = track(balancer.run((s) => resolveAfter(clock, 100, s.id), { key, require: rule }));
    const parked = track(
      balancer.run(
        (s) => {
          ranOn.push([s.id, s.labels.region!]);
          return Promise.resolve(s.id);
        },
        { key, require: rule },
      ),
    );
    await tick(clock, 1);
    expect(parked.settled).toBe(false);
    // a moves to the us region: it no longer satisfies the rule.
    await balancer
      .setShards([
        { id: 'a', target: 'a', labels: { region: 'us' } },
        { id: 'b', target: 'b', labels: { region: 'eu' } },
        { id: 'c', target: 'c', labels: { region: 'us' } },
      ])
      .catch(() => undefined);
    await tick(clock, 200);
    expect(hold.ok).toBe(true);
    expect(parked.ok).toBe(true);
    expect(ranOn).toEqual([['b', 'eu']]);
  });
});
