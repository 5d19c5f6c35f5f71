/**
 * The transit ledger against real shards: per shard, the wire bytes `stats()` reports are the
 * request body bytes the shard read, the raw bytes what it decoded, the received bytes the
 * response bodies it sent — and per `prefer` tier and per `transitLabel` value, the sums of the
 * shards there. An attempt refused at connect counts nothing; one that timed out after sending
 * counts what it sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { type DecodingServer, ndjson, startDecodingServer } from './decoding-servers.js';

const LABELS = [
  { site: 'onprem', region: 'eu' },
  { site: 'onprem', region: 'us' },
  { site: 'cloud', region: 'eu' },
  { site: 'cloud', region: 'us' },
];

let servers: DecodingServer[];
beforeAll(async () => {
  servers = await Promise.all(
    LABELS.map(() =>
      startDecodingServer({ reply: (path) => 'r'.repeat(Number(path.slice(1).split('?')[0])) }),
    ),
  );
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const serverBytes = (s: DecodingServer) => ({
  raw: sum(s.received.map((r) => r.raw.length)),
  wire: sum(s.received.map((r) => r.wire.length)),
  received: s.answered,
});

describe('the ledger equals what the shards saw', () => {
  it('per shard, per tier and per label, over 48 requests of every kind', async () => {
    const balancer = createHttpBalancer({
      shards: servers.map((s, i) => ({ id: `s${i}`, target: s.origin, labels: LABELS[i] })),
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      maxInFlightPerShard: 1,
      transitLabel: 'region',
    });
    const codecs = ['gzip', 'zstd', 'br', false] as const;
    const requests = Array.from({ length: 48 }, (_, i) =>
      balancer.request({
        method: 'POST',
        path: `/${(i * 37) % 500}`,
        body: i % 6 === 5 ? Buffer.from(ndjson(3, i)) : ndjson(20 + i, i),
        compression: codecs[i % 4],
      }),
    );
    await Promise.all(requests);
    const stats = balancer.stats();
    const seen = servers.map(serverBytes);
    // Every shard took some (the one-slot shards spill to the cloud tier).
    expect(servers.map((s) => s.received.length > 0)).toEqual([true, true, true, true]);
    expect(sum(servers.map((s) => s.received.length))).toBe(48);
    expect(stats.shards.map((s) => s.bytes)).toEqual(seen);
    const add = (xs: typeof seen) => ({
      raw: sum(xs.map((x) => x.raw)),
      wire: sum(xs.map((x) => x.wire)),
      received: sum(xs.map((x) => x.received)),
    });
    expect(stats.bytes).toEqual(add(seen));
    expect(stats.tiers.map((t) => t.transit)).toEqual([
      add([seen[0]!, seen[1]!]),
      add([seen[2]!, seen[3]!]),
      { raw: 0, wire: 0, received: 0 },
    ]);
    expect(stats.transit).toEqual({
      region: { eu: add([seen[0]!, seen[2]!]), us: add([seen[1]!, seen[3]!]) },
    });
    // Compression happened: fewer bytes left than were given.
    expect(stats.bytes.wire).toBeLessThan(stats.bytes.raw / 2);
    await balancer.close();
  });

  it('a refused connection sends nothing; a timeout after the body counts the body', async () => {
    // A port nobody listens on.
    const dead = http.createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const deadPort = (dead.address() as AddressInfo).port;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    // A shard that reads the body and never answers.
    const got: Buffer[] = [];
    const silent = http.createServer((req) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => got.push(Buffer.concat(chunks)));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentOrigin = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const toDead = createHttpBalancer({ origins: [`http://127.0.0.1:${deadPort}`], retry: false });
    const refused = await toDead
      .request({ method: 'POST', body: ndjson(50) })
      .catch((e: unknown) => e);
    expect((refused as { code?: string }).code).toBe('ECONNREFUSED');
    expect(toDead.stats().bytes).toEqual({ raw: 0, wire: 0, received: 0 });
    await toDead.close();
    const balancer = createHttpBalancer({ origins: [silentOrigin], retry: false });
    const timedOut = await balancer
      .request({ method: 'POST', body: ndjson(50), compression: 'gzip', timeoutMs: 200 })
      .catch((e: unknown) => e);
    expect((timedOut as Error).name).toBe('TimeoutError');
    // The shard has read the whole body by the time the attempt gives up.
    for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(got).toHaveLength(1);
    expect(balancer.stats().bytes).toEqual({
      raw: Buffer.byteLength(ndjson(50)),
      wire: got[0]!.length,
      received: 0,
    });
    await balancer.close({ drain: false });
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
});
