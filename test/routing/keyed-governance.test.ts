/**
 * Red-team attacks on keyed placement and governance.
 */
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  type ConsistentHashPicker,
  consistentHash,
  PushBackError,
  type Requirement,
  roundRobin,
} from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import {
  makeBalancer,
  recorded,
  shardsOf,
  type TestBalancerOptions,
  tick,
  track,
} from '../helpers.js';

function make(
  picker: ConsistentHashPicker,
  options: TestBalancerOptions<string> = {},
  shards: {
    id: string;
    target: string;
    labels?: Record<string, string>;
    weight?: number;
  }[] = shardsOf(['a', 'b', 'c']),
) {
  const { clock, balancer } = makeBalancer({
    shards,
    picker,
    random: seededRandom(3),
    ...options,
  });
  const routes = recorded(balancer, 'route');
  return { clock, balancer, routes };
}

describe('rule objects reused and changed between runs', () => {
  it('a require object changed between two runs: the second run never reaches a shard outside its (new) rule', async () => {
    const { balancer } = makeBalancer({
      shards: [
        { id: 'fra', target: 'fra', labels: { region: 'eu' } },
        { id: 'iad', target: 'iad', labels: { region: 'us' } },
      ],
      picker: roundRobin(),
    });
    const audit: unknown[] = [];
    balancer.on('route', (e) => audit.push([e.shardId, JSON.stringify(e.requirement)]));
    const req: Requirement = { region: 'eu' };
    const first = await balancer.run(async (s) => s.id, { require: req });
    expect(first).toBe('fra');
    // The caller reuses its object for the next record, now a US one.
    req.region = 'us';
    const second = await balancer.run(async (s) => s.id, { require: req });
    // The audit trail must not say a run with rule region=us went to an eu shard.
    expect(audit[1]).toEqual(['iad', '{"region":"us"}']);
    expect(second).toBe('iad');
  });

  it('a policy that returns one shared object, filled per record: each run stays inside the rule it was given', async () => {
    const shared: Record<string, string> = {};
    const { balancer } = makeBalancer({
      shards: [
        { id: 'fra', target: 'fra', labels: { region: 'eu' } },
        { id: 'iad', target: 'iad', labels: { region: 'us' } },
      ],
      picker: roundRobin(),
      policy: (meta) => {
        shared.region = (meta as { region: string }).region;
        return shared;
      },
    });
    const ran: [string, string][] = [];
    for (const region of ['eu', 'us', 'us', 'eu', 'us']) {
      const id = await balancer.run(async (s) => s.id, { meta: { region } });
      ran.push([region, id]);
    }
    expect(ran).toEqual([
      ['eu', 'fra'],
      ['us', 'iad'],
      ['us', 'iad'],
      ['eu', 'fra'],
      ['us', 'iad'],
    ]);
  });
});

describe("affinity 'spill' without boundedLoad", () => {
  it('a keyed run moved off a pushed-back home is not counted as a bounded-load displacement', async () => {
    const picker = consistentHash({ algorithm: 'ring', affinity: 'spill' });
    const { clock, balancer, routes } = make(picker, { retry: { attempts: 1 } });
    const home = balancer.homeOf('k')!;
    // The home pushes back for 1 s.
    // One attempt: a push-back spends none, so a retried run would go on elsewhere.
    const pb = track(
      balancer.run(() => Promise.reject(new PushBackError(1_000)), { key: 'k', retry: false }),
    );
    await tick(clock, 1);
    expect(pb.settled).toBe(true);
    routes.length = 0;
    const ran = await balancer.run(async (s) => s.id, { key: 'k' });
    const { displaced } = balancer.stats();
    // No load bound is configured: a bounded-load displacement cannot have happened.
    // A pushed-back home is load, as a capped one is: counted as capped, with its home.
    expect({ ran, reason: routes[0]?.reason, bounded: displaced.bounded }).toEqual({
      ran: expect.not.stringMatching(new RegExp(`^${home}$`)),
      reason: 'displaced:capped',
      bounded: 0,
    });
    expect(displaced.capped).toBe(1);
  });
});

describe('policy(meta) misbehaving', () => {
  it('a policy that throws rejects that run once with its error, counted once', async () => {
    const boom = new Error('policy boom');
    const { clock, balancer } = makeBalancer({
      shards: [{ id: 'a', target: 'a', labels: { region: 'eu' } }],
      policy: () => {
        throw boom;
      },
      random: undefined,
    });
    const out = track(balancer.run(async () => 1, { meta: {} }));
    await tick(clock, 1);
    expect(out.count).toBe(1);
    expect(out.error).toBe(boom);
    const s = balancer.stats();
    expect(s.completed + s.failed + s.refused).toBe(1);
  });

  it('a policy returning garbage (string, null, array, Map, number) rejects with ConfigError', async () => {
    for (const garbage of ['eu', null, [['region', 'eu']], new Map([['region', 'eu']]), 7]) {
      const { clock, balancer } = makeBalancer({
        shards: [{ id: 'a', target: 'a', labels: { region: 'eu' } }],
        policy: () => garbage as never,
        random: undefined,
      });
      const out = track(balancer.run(async () => 1, { meta: {} }));
      await tick(clock, 1);
      expect(out.ok, String(garbage)).toBe(false);
      expect(out.error).toBeInstanceOf(ConfigError);
    }
  });
});
