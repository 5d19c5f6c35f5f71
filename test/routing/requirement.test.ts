import { describe, expect, it } from 'vitest';
import {
  Balancer,
  ConfigError,
  NoShardAvailableError,
  type RouteEvent,
  roundRobin,
  type ShardSpec,
} from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';

const fleet: ShardSpec<string>[] = [
  { id: 'eu-1', target: 'eu-1', labels: { region: 'eu', site: 'onprem' } },
  { id: 'us-1', target: 'us-1', labels: { region: 'us', site: 'cloud' } },
  { id: 'eu-2', target: 'eu-2', labels: { region: 'eu', site: 'cloud' } },
  { id: 'ch-1', target: 'ch-1', labels: { region: 'ch', site: 'onprem' } },
];

function make(extra: Record<string, unknown> = {}) {
  const { clock, balancer } = makeBalancer({
    shards: fleet,
    picker: roundRobin(),
    random: seededRandom(7),
    ...extra,
  });
  const routes: RouteEvent[] = [];
  balancer.on('route', (event) => routes.push(event));
  return { clock, balancer, routes };
}

describe('hard routing rules', () => {
  it('sends a required run only to shards whose labels satisfy the rule', async () => {
    const { balancer, routes } = make();
    const used = new Set<string>();
    for (let i = 0; i < 40; i++) {
      used.add(await balancer.run(async (shard) => shard.id, { require: { region: 'eu' } }));
    }
    expect([...used].sort()).toEqual(['eu-1', 'eu-2']);
    expect(routes).toHaveLength(40);
    expect(routes[0]).toMatchObject({
      requirement: { region: 'eu' },
      tier: undefined,
      reason: 'direct',
    });
  });

  it('accepts a list of allowed values, and zone as a label', async () => {
    const { balancer } = make();
    const used = new Set<string>();
    for (let i = 0; i < 40; i++) {
      used.add(
        await balancer.run(async (shard) => shard.id, {
          require: { region: ['eu', 'ch'], site: 'onprem' },
        }),
      );
    }
    expect([...used].sort()).toEqual(['ch-1', 'eu-1']);
    const zoned = new Balancer({
      shards: [
        { id: 'a', target: 1, zone: 'z1' },
        { id: 'b', target: 2, zone: 'z2' },
      ],
      random: seededRandom(1),
    });
    for (let i = 0; i < 10; i++)
      expect(await zoned.run(async (s) => s.id, { require: { zone: 'z2' } })).toBe('b');
  });

  it('retries stay inside the rule, even when every allowed shard fails', async () => {
    const { balancer, routes } = make({
      retry: { attempts: 5, budget: false, backoff: { baseMs: 0, maxMs: 0 } },
    });
    const error = await balancer
      .run(
        async (shard) => {
          throw new Error(`down: ${shard.id}`);
        },
        { require: { region: 'eu' }, idempotent: true },
      )
      .catch((e: unknown) => e as { attempts: { shardId: string }[] });
    expect(error.attempts).toHaveLength(5);
    expect(new Set(error.attempts.map((a) => a.shardId))).toEqual(new Set(['eu-1', 'eu-2']));
    expect(routes.every((r) => r.shardId.startsWith('eu-'))).toBe(true);
  });

  it('waits while the allowed shards are busy, never going elsewhere', async () => {
    const { balancer, clock } = make({ maxInFlightPerShard: 1 });
    const took: string[] = [];
    const task = (ms: number) => (shard: { id: string }) =>
      new Promise<void>((resolve) => {
        took.push(shard.id);
        clock.setTimer(resolve, ms);
      });
    const runs = [0, 1, 2].map(() => balancer.run(task(10), { require: { region: 'ch' } }));
    await flush();
    expect(took).toEqual(['ch-1']);
    expect(balancer.stats().queued).toBe(2);
    // An unrequired run behind them is not blocked by them.
    const free = balancer.run(async (shard) => shard.id);
    expect(await free).not.toBe('ch-1');
    for (let step = 0; step < 3; step++) {
      clock.advance(10);
      await flush();
    }
    await Promise.all(runs);
    expect(took).toEqual(['ch-1', 'ch-1', 'ch-1']);
  });

  it('keeps to the rule when every allowed shard is ejected (panic inside the rule)', async () => {
    const { balancer } = make({
      retry: false,
      health: { consecutiveFailures: 1, maxEjectedPercent: 100, panicThreshold: 0 },
    });
    for (let i = 0; i < 2; i++) {
      await balancer
        .run(
          async () => {
            throw new Error('boom');
          },
          { require: { region: 'eu' } },
        )
        .catch(() => undefined);
    }
    expect(
      balancer
        .stats()
        .shards.filter((s) => s.ejected)
        .map((s) => s.id)
        .sort(),
    ).toEqual(['eu-1', 'eu-2']);
    const id = await balancer.run(async (shard) => shard.id, { require: { region: 'eu' } });
    expect(id.startsWith('eu-')).toBe(true);
  });

  it('rejects a run whose rule no member satisfies, naming the rule, and sends it nowhere', async () => {
    const { balancer, routes } = make();
    let called = false;
    const error = await balancer
      .run(
        async () => {
          called = true;
        },
        { require: { region: 'eu', site: 'edge' } },
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoShardAvailableError);
    expect((error as Error).message).toContain('region=eu, site=edge');
    expect(called).toBe(false);
    expect(routes).toHaveLength(0);
  });

  it('rejects a rule naming an unknown label or allowing nothing with a ConfigError', async () => {
    const { balancer } = make();
    const unknown = await balancer
      .run(async () => 1, { require: { tenant: 'a' } })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ConfigError);
    expect((unknown as Error).message).toContain('require.tenant');
    const empty = await balancer
      .run(async () => 1, { require: { region: [] } })
      .catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(ConfigError);
    expect((empty as Error).message).toContain('require.region');
  });

  it('derives the rule from meta with policy(), and rejects a run whose policy rule is invalid', async () => {
    const { balancer } = make({
      policy: (meta: unknown) =>
        (meta as { tenant?: string })?.tenant === 'acme' ? { region: 'ch' } : undefined,
    });
    for (let i = 0; i < 5; i++) {
      expect(await balancer.run(async (s) => s.id, { meta: { tenant: 'acme' } })).toBe('ch-1');
    }
    const other = new Set<string>();
    for (let i = 0; i < 8; i++)
      other.add(await balancer.run(async (s) => s.id, { meta: { tenant: 'x' } }));
    expect(other.size).toBe(4);
    const bad = make({ policy: () => ({ planet: 'mars' }) }).balancer;
    const error = await bad.run(async () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('policy(meta).planet');
  });

  it('wrap() takes a require function', async () => {
    const { balancer } = make();
    const send = balancer.wrap(async (shard, _ctx, region: string) => `${region}:${shard.id}`, {
      require: (region) => ({ region }),
    });
    expect(await send('ch')).toBe('ch:ch-1');
    expect(await send('us')).toBe('us:us-1');
  });

  it('counts attempts and bytes per label value', async () => {
    const { balancer } = make();
    await balancer.run(async () => 1, { require: { region: 'ch' }, bytes: 100 });
    await balancer.run(async () => 1, { require: { region: 'us' }, bytes: 7 });
    const { labels } = balancer.stats();
    expect(labels.region).toEqual({
      ch: { requests: 1, bytes: 100 },
      us: { requests: 1, bytes: 7 },
    });
    expect(labels.site).toEqual({
      onprem: { requests: 1, bytes: 100 },
      cloud: { requests: 1, bytes: 7 },
    });
  });
});
