import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer, HttpError } from '../../src/http/index.js';
import { ConfigError } from '../../src/index.js';
import { startServers, type TestServer } from './servers.js';

/** `sendTo`: an HTTP exchange on the shard a run was given, so `ingest` and streams use the pools. */
describe('HttpBalancer.sendTo', () => {
  let servers: TestServer[] = [];
  let http: HttpBalancer | undefined;
  afterEach(async () => {
    await http?.close({ drain: false });
    await Promise.all(servers.map((s) => s.close()));
  });

  it('lets ingest() send every record through the picked shard’s pool; a 4xx record is reported, not retried', async () => {
    const received = new Set<number>();
    servers = await startServers(3, (_req, res, body) => {
      const record = JSON.parse(body.toString()) as { id: number };
      if (record.id === 13) {
        res.statusCode = 422;
        res.end('unlucky');
        return;
      }
      received.add(record.id);
      res.end('ok');
    });
    http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const h = http;
    const records = Array.from({ length: 2_000 }, (_, id) => ({ id }));
    const summary = await h.ingest(records, {
      send: (shard, record, ctx) =>
        h.sendTo(shard, { method: 'POST', path: '/ingest', body: JSON.stringify(record) }, ctx),
    });
    expect(summary.written).toBe(1_999);
    expect(summary.failed).toBe(1);
    expect(summary.errors[0]!.record).toEqual({ id: 13 });
    expect(summary.errors[0]!.error).toBeInstanceOf(HttpError);
    expect((summary.errors[0]!.error as HttpError).statusCode).toBe(422);
    expect(received.size).toBe(1_999);
    // Every shard took part, and the 4xx record reached exactly one server once.
    expect(servers.every((s) => s.requests > 0)).toBe(true);
    expect(servers.reduce((n, s) => n + s.requests, 0)).toBe(2_000);
    expect(Object.values(summary.perShard).reduce((a, b) => a + b, 0)).toBe(1_999);
  });

  it('serves createWriteStream in a pipeline', async () => {
    let count = 0;
    servers = await startServers(2, (_req, res) => {
      count++;
      res.end('ok');
    });
    http = createHttpBalancer({ origins: servers.map((s) => s.origin), maxQueued: 16 });
    const h = http;
    await pipeline(
      Readable.from(Array.from({ length: 500 }, (_, i) => `row-${i}`)),
      h.createWriteStream({
        send: (shard, row: string, ctx) =>
          h.sendTo(shard, { method: 'PUT', path: `/rows/${row}`, body: row }, ctx),
      }),
    );
    expect(count).toBe(500);
  });

  it('refuses a shard of another balancer, and unknown request fields', async () => {
    servers = await startServers(1, (_req, res) => res.end('ok'));
    http = createHttpBalancer({ origins: [servers[0]!.origin] });
    const other = createHttpBalancer({ origins: [servers[0]!.origin] });
    const foreign = other.shards[0]!;
    await expect(http.sendTo(foreign, { method: 'GET' })).rejects.toBeInstanceOf(ConfigError);
    const own = http.shards[0]!;
    await expect(http.sendTo(own, { method: 'GET', key: 'k' } as never)).rejects.toThrow(
      'request.key',
    );
    const res = await http.sendTo(own, { method: 'GET', path: '/x' });
    expect(res.statusCode).toBe(200);
    expect(res.shardId).toBe(own.id);
    await other.close();
  });
});
