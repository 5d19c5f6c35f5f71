/**
 * `shardwise.bytes` through the real OpenTelemetry SDK: body bytes as they travelled, by shard,
 * tier, encoding and direction — equal to what real shards read and answered, and to `stats()`.
 */
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { Balancer, ConfigError } from '../../src/index.js';
import { instrument } from '../../src/otel/index.js';
import { type DecodingServer, ndjson, startDecodingServer } from '../http/decoding-servers.js';
import { collect, sum, TestReader } from './metrics.js';

let servers: DecodingServer[];
beforeAll(async () => {
  servers = await Promise.all([0, 1].map(() => startDecodingServer({ reply: () => 'accepted' })));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe('shardwise.bytes', () => {
  it('equals what the shards read, by encoding, tier and direction', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const http = createHttpBalancer({
      shards: servers.map((s, i) => ({
        id: `s${i}`,
        target: s.origin,
        labels: { site: i === 0 ? 'onprem' : 'cloud' },
      })),
      prefer: [{ site: 'onprem' }],
      maxInFlightPerShard: 1,
    });
    const detach = instrument(http, { meterProvider: provider, attributes: { job: 'load' } });
    const codecs = ['gzip', 'zstd', 'br', false] as const;
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        http.request({
          method: 'POST',
          path: '/',
          body: ndjson(30 + i, i),
          compression: codecs[i % 4],
        }),
      ),
    );
    const points = (await collect(reader)).get('shardwise.bytes');
    expect(points).toBeDefined();
    for (const [i, server] of servers.entries()) {
      const shard = `s${i}`;
      const wire = (encoding: string | undefined) =>
        server.received
          .filter((r) => r.encoding === encoding)
          .reduce((n, r) => n + r.wire.length, 0);
      for (const encoding of ['gzip', 'zstd', 'br']) {
        expect(sum(points, { 'shardwise.shard': shard, 'shardwise.encoding': encoding })).toBe(
          wire(encoding),
        );
      }
      expect(
        sum(points, {
          'shardwise.shard': shard,
          'shardwise.encoding': 'identity',
          'shardwise.direction': 'sent',
        }),
      ).toBe(wire(undefined));
      expect(sum(points, { 'shardwise.shard': shard, 'shardwise.direction': 'received' })).toBe(
        server.answered,
      );
    }
    // Tiers: the onprem shard is tier 0, the other the last tier (1).
    const stats = http.stats();
    for (const tier of [0, 1]) {
      const figures = stats.tiers[tier]!.transit;
      const sent = (points ?? [])
        .filter(
          (p) =>
            p.attributes['shardwise.tier'] === tier &&
            p.attributes['shardwise.direction'] === 'sent',
        )
        .reduce((n, p) => n + (p.value as number), 0);
      expect(sent).toBe(figures.wire);
    }
    expect(points!.every((p) => p.attributes.job === 'load')).toBe(true);
    expect(sum(points, { 'shardwise.direction': 'sent' })).toBe(stats.bytes.wire);
    detach();
    await http.close();
    await provider.shutdown();
  });

  it('counts a user send’s reports; no tier attribute without tiers; its keys are its own', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const balancer = new Balancer({ shards: [{ id: 'a', target: 1 }] });
    expect(() =>
      instrument(balancer, { meterProvider: provider, attributes: { 'shardwise.encoding': 'x' } }),
    ).toThrow(ConfigError);
    const detach = instrument(balancer, { meterProvider: provider });
    await balancer.run(async (_s, ctx) => {
      ctx.reportSent(1000, 300, 'zstd');
      ctx.reportReceived(40);
    });
    const points = (await collect(reader)).get('shardwise.bytes')!;
    expect(
      points
        .map((p) => [p.attributes, p.value])
        .sort((x, y) => (x[1] as number) - (y[1] as number)),
    ).toEqual([
      [
        {
          'shardwise.shard': 'a',
          'shardwise.encoding': 'identity',
          'shardwise.direction': 'received',
        },
        40,
      ],
      [
        { 'shardwise.shard': 'a', 'shardwise.encoding': 'zstd', 'shardwise.direction': 'sent' },
        300,
      ],
    ]);
    detach();
    // Detached: nothing more is counted.
    await balancer.run(async (_s, ctx) => ctx.reportSent(5, 5, 'zstd'));
    const after = (await collect(reader)).get('shardwise.bytes')!;
    expect(sum(after, { 'shardwise.encoding': 'zstd' })).toBe(300);
    await provider.shutdown();
  });
});
