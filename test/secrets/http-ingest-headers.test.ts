/**
 * `http.ingest` with credentials made per attempt: a `headers` function is called once for each
 * attempt (a retry gets a fresh token), the batch's own `content-type` and `Idempotency-Key` are
 * still sent on every attempt, `sign` sees the exact bytes that go (compressed) — and every value
 * the function and the hook made stays out of errors, events, stats, progress reports and an
 * OpenTelemetry export, against shards that echo the whole request in their error pages.
 */
import { createHash, createHmac } from 'node:crypto';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer, type SignRequest } from '../../src/http/index.js';
import type { IngestProgress } from '../../src/ingest/types.js';
import { instrument } from '../../src/otel/index.js';
import { type DecodingServer, decode, startDecodingServer } from '../http/decoding-servers.js';
import { startServer, type TestServer } from '../http/servers.js';
import { TestReader } from '../otel/metrics.js';
import { collectEvents, leaks, SECRET } from './scan.js';

interface Row {
  id: number;
  note: string;
}

const rows = (n: number): Row[] =>
  Array.from({ length: n }, (_, id) => ({
    id,
    note: `record ${id} of the load, ${'x'.repeat(40)}`,
  }));

let servers: (DecodingServer | TestServer)[] = [];
let balancers: HttpBalancer[] = [];
afterEach(async () => {
  await Promise.all(balancers.map((b) => b.close()));
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
  balancers = [];
});

describe('http.ingest: headers per attempt and sign', () => {
  it('the function is called once per attempt; content-type and the batch id go on every one', async () => {
    // Each batch's first send is answered 500: every batch takes two attempts.
    const seenIds = new Set<string>();
    const shard = await startDecodingServer({
      status: (_p, _n, headers) => {
        const id = String(headers['idempotency-key']);
        if (seenIds.has(id)) return 200;
        seenIds.add(id);
        return 500;
      },
    });
    servers.push(shard);
    const http = createHttpBalancer({
      origins: [shard.origin],
      retry: { attempts: 3, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
      health: false,
    });
    balancers.push(http);
    const calls: [string, number][] = [];
    const signed: SignRequest[] = [];
    const key = 'the signing key';
    const summary = await http.ingest(rows(1_000), {
      path: '/bulk?db=logs',
      batch: { maxRecords: 500 },
      compression: 'gzip',
      headers: async (s, attempt) => {
        calls.push([s.id, attempt]);
        return { authorization: `Bearer token-${calls.length}` };
      },
      sign: (request) => {
        signed.push(request);
        const mac = createHmac('sha256', key).update(request.body!).digest('hex');
        return { 'x-signature': mac };
      },
    });
    expect(summary.written).toBe(1_000);
    expect(summary.batches).toBe(4);
    // Once per attempt: two batches, two attempts each.
    expect(calls).toHaveLength(4);
    expect(calls.map(([, attempt]) => attempt).sort()).toEqual([1, 1, 2, 2]);
    expect(new Set(calls.map(([id]) => id))).toEqual(new Set([shard.origin]));
    const got = shard.received;
    expect(got).toHaveLength(4);
    const tokens = got.map((r) => r.headers.authorization);
    // A fresh token for each attempt, the batch's own headers on each.
    expect(new Set(tokens).size).toBe(4);
    for (const r of got) {
      expect(r.headers['content-type']).toBe('application/x-ndjson');
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.headers['idempotency-key']).toMatch(/^[0-9a-f]{16}-/);
      // The hook hashed the bytes that arrived.
      expect(r.headers['x-signature']).toBe(createHmac('sha256', key).update(r.wire).digest('hex'));
    }
    expect(new Set(got.map((r) => r.headers['idempotency-key'])).size).toBe(2);
    // What sign saw: the final method, URL, headers (the function's, content-encoding, the id).
    for (const request of signed) {
      expect(request.method).toBe('POST');
      expect(request.url).toBe(`${shard.origin}/bulk?db=logs`);
      expect(request.headers['content-encoding']).toBe('gzip');
      expect(request.headers['content-type']).toBe('application/x-ndjson');
      expect(request.headers.authorization).toMatch(/^Bearer token-\d$/);
    }
    const wireHashes = got.map((r) => createHash('sha256').update(r.wire).digest('hex')).sort();
    const signedHashes = signed
      .map((s) => createHash('sha256').update(s.body!).digest('hex'))
      .sort();
    expect(signedHashes).toEqual(wireHashes);
  });

  it('a content-type from the function wins over the encoding’s; the batch id is still sent', async () => {
    const shard = await startDecodingServer();
    servers.push(shard);
    const http = createHttpBalancer({ origins: [shard.origin] });
    balancers.push(http);
    await http.ingest(rows(3), {
      path: '/x',
      headers: () => ({ 'Content-Type': 'application/json-seq' }),
    });
    expect(shard.received[0]!.headers['content-type']).toBe('application/json-seq');
    expect(shard.received[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f]{16}-/);
  });

  it('values made per attempt never appear in errors, events, stats, progress or metrics', async () => {
    const echoing = await startServer(async (req, res, body) => {
      const decoded = (
        await decode(req.headers['content-encoding'] as string | undefined, body)
      ).toString();
      res.statusCode = req.url?.startsWith('/5') ? 500 : 401;
      const lines = Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`);
      res.end(`${JSON.stringify({ headers: req.headers })}\n${lines.join('\n')}\n\n${decoded}`);
    });
    servers.push(echoing);
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const http = createHttpBalancer({
      origins: [echoing.origin],
      retry: { attempts: 2, budget: false, backoff: { baseMs: 0, maxMs: 1 } },
      health: false,
    });
    balancers.push(http);
    instrument(http, { meterProvider: provider });
    const events = collectEvents(http);
    const headers = (_shard: unknown, attempt: number) => ({
      authorization: `Bearer ${SECRET.headerFnToken}`,
      'x-tenant-proof': `${SECRET.headerFnProof}-${attempt}`,
    });
    const sign = () => ({ 'x-request-mac': SECRET.signature });
    const failed: unknown[] = [];
    const progress: IngestProgress[] = [];
    const summaries: unknown[] = [];
    for (const [path, compression] of [
      ['/401', 'gzip'],
      ['/500', 'zstd'],
      ['/500', false],
    ] as const) {
      summaries.push(
        await http.ingest(rows(40), {
          path,
          compression: { codec: compression || 'gzip', minBytes: compression ? 0 : 1e9 },
          headers,
          sign,
          batch: { maxRecords: 20 },
          onFailed: (_row, error) => failed.push(error),
          onProgress: (p) => progress.push(p),
        }),
      );
    }
    const stream = http.createWriteStream<Row>({ path: '/401', headers, sign });
    const streamError = await new Promise<unknown>((resolve) => {
      stream.on('error', resolve);
      stream.on('failed', (_row, error) => failed.push(error));
      stream.end(rows(1)[0]);
    });
    failed.push(streamError);
    expect(failed).toHaveLength(122);
    // The echo is still useful: the error carries the shard's answer, secrets scrubbed.
    const excerpt = (failed[0] as { excerpt?: string }).excerpt ?? '';
    expect(excerpt).toContain('x-tenant-proof');
    expect(excerpt).toContain('[redacted]');
    expect(leaks(failed)).toEqual([]);
    expect(leaks(summaries)).toEqual([]);
    expect(leaks(progress)).toEqual([]);
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
    expect(events.get('transit')!.length).toBeGreaterThan(0);
    expect(leaks(http.stats())).toEqual([]);
    const exported = JSON.stringify((await reader.collect()).resourceMetrics);
    expect(exported).toContain('shardwise.bytes');
    expect(leaks(exported)).toEqual([]);
    await provider.shutdown();
  });
});
