/**
 * The transit ledger: bytes an attempt reports through its context are counted once, per shard,
 * in total, per `prefer` tier and per value of `transitLabel` — whatever happens to the attempt
 * after — and reports that are not byte counts are refused by name.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, roundRobin } from '../../src/index.js';
import { flush, makeBalancer, recorded, type TestBalancerOptions, tick } from '../helpers.js';

const SHARDS = [
  { id: 'a', target: 'a', labels: { site: 'onprem', region: 'eu' } },
  { id: 'b', target: 'b', labels: { site: 'cloud', region: 'eu' } },
  { id: 'c', target: 'c', labels: { site: 'cloud', region: 'us' }, zone: 'us-1' },
  { id: 'd', target: 'd', zone: 'eu-2' },
];

function make(options: TestBalancerOptions<string> = {}) {
  const { clock, balancer } = makeBalancer({
    shards: SHARDS,
    picker: roundRobin(),
    ...options,
  });
  return { clock, balancer };
}

describe('the transit ledger', () => {
  it('counts what each attempt reports: per shard, in total, per tier and per label value', async () => {
    const { balancer } = make({
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      transitLabel: 'region',
      maxInFlightPerShard: 1,
    });
    // Each run holds its shard until released, so the four land on a, b, c, d in tier order.
    const releases: (() => void)[] = [];
    const runs = [100, 200, 300, 400].map((raw) =>
      balancer.run(async (shard, ctx) => {
        ctx.reportSent(raw, raw / 4, 'gzip');
        ctx.reportReceived(raw / 10);
        await new Promise<void>((resolve) => releases.push(resolve));
        return shard.id;
      }),
    );
    await flush();
    for (const release of releases) release();
    expect(await Promise.all(runs)).toEqual(['a', 'b', 'c', 'd']);
    const stats = balancer.stats();
    expect(stats.shards.map((s) => [s.id, s.bytes])).toEqual([
      ['a', { raw: 100, wire: 25, received: 10 }],
      ['b', { raw: 200, wire: 50, received: 20 }],
      ['c', { raw: 300, wire: 75, received: 30 }],
      ['d', { raw: 400, wire: 100, received: 40 }],
    ]);
    expect(stats.bytes).toEqual({ raw: 1000, wire: 250, received: 100 });
    // Tier 0 onprem (a), tier 1 cloud (b, c), tier 2 the rest (d).
    expect(stats.tiers.map((t) => t.transit)).toEqual([
      { raw: 100, wire: 25, received: 10 },
      { raw: 500, wire: 125, received: 50 },
      { raw: 400, wire: 100, received: 40 },
    ]);
    // d has no region: in the totals only.
    expect(stats.transit).toEqual({
      region: {
        eu: { raw: 300, wire: 75, received: 30 },
        us: { raw: 300, wire: 75, received: 30 },
      },
    });
    await balancer.close();
  });

  it('without a transitLabel nor tiers: totals and shards only; `zone` reads a shard’s zone', async () => {
    const plain = make();
    await plain.balancer.run(async (_s, ctx) => ctx.reportSent(10, 10));
    const s = plain.balancer.stats();
    expect([s.transit, s.tiers, s.bytes]).toEqual([{}, [], { raw: 10, wire: 10, received: 0 }]);
    const zoned = make({ transitLabel: 'zone' });
    for (let i = 0; i < 4; i++) await zoned.balancer.run(async (_s, ctx) => ctx.reportSent(1, 1));
    expect(zoned.balancer.stats().transit).toEqual({
      zone: { 'us-1': { raw: 1, wire: 1, received: 0 }, 'eu-2': { raw: 1, wire: 1, received: 0 } },
    });
  });

  it('a retried run counts every attempt’s bytes on the shard that took them', async () => {
    const { balancer, clock } = make({ retry: { attempts: 3, budget: false } });
    const run = balancer.run(
      async (shard, ctx) => {
        ctx.reportSent(1000, 200, 'zstd');
        if (shard.id !== 'c') throw new Error('fails');
        ctx.reportReceived(7);
        return 'ok';
      },
      { idempotent: true },
    );
    await tick(clock, 10_000);
    expect(await run).toBe('ok');
    const stats = balancer.stats();
    expect(stats.shards.map((s) => s.bytes.wire)).toEqual([200, 200, 200, 0]);
    expect(stats.bytes).toEqual({ raw: 3000, wire: 600, received: 7 });
  });

  it('bytes reported after the attempt timed out still count (they travelled)', async () => {
    const { balancer, clock } = make({ retry: false });
    let late: ((n: number) => void) | undefined;
    const run = balancer.run(
      (_shard, ctx) =>
        new Promise<void>(() => {
          late = (n) => ctx.reportReceived(n);
        }),
      { timeoutMs: 50 },
    );
    run.catch(() => {});
    await tick(clock, 60);
    await expect(run).rejects.toThrow(/timed out|50 ms/);
    late!(123);
    expect(balancer.stats().bytes.received).toBe(123);
  });

  it('a removed shard’s bytes stay in the totals', async () => {
    const { balancer } = make();
    for (let i = 0; i < 4; i++) await balancer.run(async (_s, ctx) => ctx.reportSent(5, 5));
    await balancer.removeShard('a');
    const stats = balancer.stats();
    expect(stats.shards.map((s) => s.id)).toEqual(['b', 'c', 'd']);
    expect(stats.bytes.wire).toBe(20);
  });

  it('the snapshot is a copy: a later report does not change it', async () => {
    const { balancer } = make({ transitLabel: 'region', prefer: [{ site: 'onprem' }] });
    await balancer.run(async (_s, ctx) => ctx.reportSent(5, 5));
    const before = balancer.stats();
    await balancer.run(async (_s, ctx) => ctx.reportSent(5, 5));
    expect(before.bytes.wire).toBe(5);
    expect(before.shards[0]!.bytes.wire).toBe(5);
    expect(before.tiers[0]!.transit.wire).toBe(5);
    expect(before.transit.region!.eu!.wire).toBe(5);
  });
});

describe('transit events', () => {
  it('carry ids and figures: shard, attempt, tier, direction, bytes, encoding', async () => {
    const { balancer } = make({ prefer: [{ site: 'onprem' }] });
    const seen = recorded(balancer, 'transit');
    await balancer.run(async (_s, ctx) => {
      ctx.reportSent(1000, 150, 'br');
      ctx.reportReceived(12, 'gzip');
      ctx.reportSent(10, 10);
      ctx.reportReceived(3);
    });
    expect(seen).toEqual([
      {
        shardId: 'a',
        attempt: 1,
        tier: 0,
        direction: 'sent',
        bytes: 150,
        rawBytes: 1000,
        encoding: 'br',
      },
      {
        shardId: 'a',
        attempt: 1,
        tier: 0,
        direction: 'received',
        bytes: 12,
        rawBytes: 12,
        encoding: 'gzip',
      },
      {
        shardId: 'a',
        attempt: 1,
        tier: 0,
        direction: 'sent',
        bytes: 10,
        rawBytes: 10,
        encoding: 'identity',
      },
      {
        shardId: 'a',
        attempt: 1,
        tier: 0,
        direction: 'received',
        bytes: 3,
        rawBytes: 3,
        encoding: 'identity',
      },
    ]);
    const untiered = make().balancer;
    const plain = recorded(untiered, 'transit');
    await untiered.run(async (_s, ctx) => ctx.reportSent(1, 1));
    expect(plain[0]!.tier).toBeUndefined();
  });
});

describe('bad reports and options', () => {
  const bad: [string, (ctx: import('../../src/index.js').RunContext) => void, string][] = [
    ['NaN', (ctx) => ctx.reportSent(Number.NaN, 1), 'ctx.reportSent(rawBytes, wireBytes)'],
    ['negative', (ctx) => ctx.reportSent(1, -1), 'ctx.reportSent(rawBytes, wireBytes)'],
    [
      'Infinity',
      (ctx) => ctx.reportReceived(Number.POSITIVE_INFINITY),
      'ctx.reportReceived(bytes)',
    ],
    ['a string', (ctx) => ctx.reportReceived('12' as never), 'ctx.reportReceived(bytes)'],
    ['an empty encoding', (ctx) => ctx.reportSent(1, 1, ''), 'ctx.reportSent(…, encoding)'],
    [
      'an encoding object',
      (ctx) => ctx.reportReceived(1, {} as never),
      'ctx.reportReceived(…, encoding)',
    ],
  ];
  for (const [what, report, field] of bad) {
    it(`${what}: the report throws a ConfigError naming ${field}, and counts nothing`, async () => {
      const { balancer } = make({ retry: false });
      const error = await balancer.run(async (_s, ctx) => report(ctx)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
      expect(balancer.stats().bytes).toEqual({ raw: 0, wire: 0, received: 0 });
    });
  }

  it('transitLabel must be a non-empty string', () => {
    for (const value of ['', 5, ['region']]) {
      expect(() => make({ transitLabel: value as never })).toThrow(
        /`transitLabel` must be a shard label/,
      );
    }
  });
});
