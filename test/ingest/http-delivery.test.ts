/**
 * `http.ingest` delivery, against real `node:http` servers on 127.0.0.1: each batch carries its id
 * (an `Idempotency-Key` header by default, a query parameter, or nothing), the same for every send
 * of its records; a server that answers 500 to bad data (ClickHouse does) is read by `classify`
 * and its batch split down to the record at fault, retried nowhere. Counts, never timings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, createHttpBalancer, type HttpError } from '../../src/http/index.js';
import { startServers, type TestServer } from '../http/servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

interface Row {
  id: number;
}
const rows = (n: number): Row[] => Array.from({ length: n }, (_, id) => ({ id }));
const idsOf = (body: Buffer) =>
  body
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as Row).id);

describe('batch ids on the wire', () => {
  it('go as Idempotency-Key by default: one key per batch, the same on its retry', async () => {
    const seen: [string, number[]][] = [];
    let first = true;
    servers = await startServers(1, (req, res, body) => {
      seen.push([String(req.headers['idempotency-key']), idsOf(body)]);
      // The first request is stored but answered 503 (no Retry-After): it is sent again.
      if (first) {
        first = false;
        res.writeHead(503).end('busy');
        return;
      }
      res.writeHead(204).end();
    });
    const http = createHttpBalancer({
      origins: [servers[0]!.origin],
      retry: { backoff: { baseMs: 1, maxMs: 1 } },
    });
    const summary = await http.ingest(rows(30), { path: '/in', batch: { maxRecords: 10 } });
    await http.close();
    expect(summary.written).toBe(30);
    expect(seen).toHaveLength(4);
    const byKey = new Map<string, string>();
    for (const [key, ids] of seen) {
      expect(key).toMatch(/^[0-9a-f]{16}-[0-9a-z]+$/);
      const before = byKey.get(key);
      if (before !== undefined) expect(ids.join()).toBe(before);
      byKey.set(key, ids.join());
    }
    expect(byKey.size).toBe(3); // three batches; the retried one kept its key
  });

  it('go in the query with { query }, and nowhere with false', async () => {
    const urls: string[] = [];
    const headers: (string | undefined)[] = [];
    servers = await startServers(1, (req, res) => {
      urls.push(req.url!);
      headers.push(req.headers['idempotency-key'] as string | undefined);
      res.writeHead(204).end();
    });
    const http = createHttpBalancer({ origins: [servers[0]!.origin] });
    await http.ingest(rows(5), {
      path: '/?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow',
      idempotencyKey: { query: 'insert_deduplication_token' },
      batch: { maxRecords: 5 },
    });
    await http.ingest(rows(5), { path: '/plain', idempotencyKey: false, batch: { maxRecords: 5 } });
    await http.close();
    expect(urls[0]).toMatch(
      /^\/\?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow&insert_deduplication_token=[0-9a-f]{16}-0$/,
    );
    expect(urls[1]).toBe('/plain');
    expect(headers).toEqual([undefined, undefined]);
  });

  it('a bad idempotencyKey is a ConfigError naming it', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    for (const bad of [
      {},
      { header: '' },
      { header: 'a b' },
      { query: 1 },
      'yes',
      { header: 'x', query: 'y' },
    ]) {
      await expect(http.ingest([], { path: '/x', idempotencyKey: bad as never })).rejects.toThrow(
        ConfigError,
      );
      await expect(http.ingest([], { path: '/x', idempotencyKey: bad as never })).rejects.toThrow(
        /idempotencyKey/,
      );
    }
    await http.close();
  });
});

describe('classify', () => {
  it('reads a 500 for bad data as rejected: the batch is split to the bad record, no shard charged', async () => {
    let requests = 0;
    servers = await startServers(3, (_req, res, body) => {
      requests++;
      if (idsOf(body).includes(1_234)) {
        res.writeHead(500).end('Code: 27. DB::Exception: Cannot parse input: expected , at row 5');
        return;
      }
      res.writeHead(200).end('');
    });
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      health: { consecutiveFailures: 1 },
    });
    const summary = await http.ingest(rows(5_000), {
      path: '/',
      batch: { maxRecords: 500 },
      classify: ({ statusCode, body }) =>
        statusCode === 500 && /Cannot parse/.test(body) ? 'rejected' : undefined,
    });
    const stats = http.stats();
    await http.close();
    expect(summary.written).toBe(4_999);
    expect(summary.failures.map((f) => f.record.id)).toEqual([1_234]);
    expect((summary.failures[0]!.error as HttpError).statusCode).toBe(500);
    // 10 batches and ⌈log2 500⌉ = 9 splits of two requests: never a retry elsewhere.
    expect(requests).toBeLessThanOrEqual(10 + 2 * 9);
    for (const shard of stats.shards) expect(shard.ejections).toBe(0);
  });

  it("without it, a 500 is retried elsewhere and the whole batch fails (what 'rejected' avoids)", async () => {
    servers = await startServers(2, (_req, res, body) => {
      if (idsOf(body).includes(7)) res.writeHead(500).end('Cannot parse input');
      else res.writeHead(200).end('');
    });
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      retry: { backoff: { baseMs: 1, maxMs: 1 } },
    });
    const summary = await http.ingest(rows(100), { path: '/', batch: { maxRecords: 50 } });
    await http.close();
    expect(summary.written).toBe(50);
    expect(summary.failed).toBe(50);
  });

  it("'failed' fails the batch as it is; 'retry' retries a 4xx; a bad verdict is a ConfigError", async () => {
    servers = await startServers(1, (_req, res) => res.writeHead(409).end('conflict'));
    const http = createHttpBalancer({
      origins: [servers[0]!.origin],
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 } },
    });
    let calls = 0;
    const retried = await http.ingest(rows(4), {
      path: '/',
      batch: { maxRecords: 4 },
      classify: () => {
        calls++;
        return 'retry';
      },
    });
    expect(retried.failed).toBe(4);
    expect(calls).toBe(2); // two attempts: the 409 was retried
    const bad = await http.ingest(rows(2), {
      path: '/',
      batch: { maxRecords: 2 },
      classify: () => 'maybe' as never,
    });
    expect(bad.failed).toBe(2);
    expect(bad.failures[0]!.error).toBeInstanceOf(ConfigError);
    await http.close();
  });
});
