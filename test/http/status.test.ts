import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  PushBackError,
  RetriesExhaustedError,
  TimeoutError,
} from '../../src/base/errors.js';
import { BodyTooLargeError, createHttpBalancer, HttpError } from '../../src/http/index.js';
import { isShardwiseError } from '../../src/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { deadPort, type Handler, startServer, type TestServer } from './servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(handler: Handler, options?: Parameters<typeof startServer>[1]) {
  const server = await startServer(handler, options);
  servers.push(server);
  return server;
}

describe('responses', () => {
  it('resolves a 2xx with status, headers, body, text() and json(), and the shard id', async () => {
    const server = await serve((req, res, body) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url, got: body.toString() }));
    });
    const http = createHttpBalancer({ origins: [server.origin] });
    const res = await http.request({ method: 'put', path: '/a?b=1', body: Buffer.from('hi') });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json()).toEqual({ method: 'PUT', url: '/a?b=1', got: 'hi' });
    expect(res.text()).toContain('"got":"hi"');
    expect(res.shardId).toBe(server.origin);
    await http.close();
  });

  it('does not retry a 4xx: one request reaches the server, the caller gets HttpError 400', async () => {
    const a = await serve((_req, res) => {
      res.statusCode = 400;
      res.end(`bad record: ${'x'.repeat(5_000)}`);
    });
    const b = await serve((_req, res) => {
      res.statusCode = 400;
      res.end('bad record');
    });
    const http = createHttpBalancer({ origins: [a.origin, b.origin], picker: roundRobin() });
    const error = await http
      .request({ method: 'PUT', path: '/r/1?token=abc', body: '{}' })
      .catch((e: unknown) => e);
    expect(a.requests + b.requests).toBe(1);
    expect(error).toBeInstanceOf(HttpError);
    const e = error as HttpError;
    expect(e.statusCode).toBe(400);
    expect(e.retryable).toBe(false);
    expect(e.code).toBe('SHARDWISE_HTTP');
    expect(e.name).toBe('HttpError');
    expect(isShardwiseError(e)).toBe(true);
    expect(e.excerpt.startsWith('bad record: xxx')).toBe(true);
    expect(Buffer.byteLength(e.excerpt)).toBeLessThanOrEqual(1024);
    expect(e.path).toBe('/r/1');
    expect(e.message).not.toContain('token=abc');
    await http.close();
  });

  it('retries a 5xx on another shard (idempotent PUT), and gives up with every attempt', async () => {
    const bad = await serve((_req, res) => {
      res.statusCode = 502;
      res.end('upstream down');
    });
    const good = await serve((_req, res) => res.end('ok'));
    const http = createHttpBalancer({ origins: [bad.origin, good.origin], picker: roundRobin() });
    const res = await http.request({ method: 'PUT', path: '/x', body: 'a' });
    expect(res.shardId).toBe(good.origin);
    expect(bad.requests).toBe(1);
    await http.close();

    const only = createHttpBalancer({
      origins: [bad.origin],
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 } },
    });
    const error = await only.request({ path: '/x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    const attempts = (error as RetriesExhaustedError).attempts;
    expect(attempts).toHaveLength(2);
    expect((attempts[0]!.error as HttpError).statusCode).toBe(502);
    expect((attempts[0]!.error as HttpError).retryable).toBe(true);
    await only.close();
  });

  it('does not retry a POST that reached a shard and failed with 5xx', async () => {
    const bad = await serve((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    const good = await serve((_req, res) => res.end('ok'));
    const http = createHttpBalancer({ origins: [bad.origin, good.origin], picker: roundRobin() });
    const error = await http.request({ method: 'POST', path: '/', body: 'a' }).catch((e) => e);
    expect((error as HttpError).statusCode).toBe(500);
    expect(good.requests).toBe(0);
    await http.close();
  });

  it('retries even a POST when the connection was refused (proved not sent)', async () => {
    const port = await deadPort();
    const good = await serve((_req, res) => res.end('ok'));
    const http = createHttpBalancer({
      origins: [`http://127.0.0.1:${port}`, good.origin],
      picker: roundRobin(),
    });
    const failures: unknown[] = [];
    http.on('failure', ({ error }) => failures.push(error));
    const res = await http.request({ method: 'POST', path: '/', body: 'a' });
    expect(res.shardId).toBe(good.origin);
    expect((failures[0] as { code: string }).code).toBe('ECONNREFUSED');
    expect((failures[0] as { notSent: boolean }).notSent).toBe(true);
    await http.close();
  });

  it('honours 429 Retry-After: 1 (the retry arrives ≥ 900 ms later, server clock)', async () => {
    let first = true;
    const server = await serve((_req, res) => {
      if (first) {
        first = false;
        res.statusCode = 429;
        res.setHeader('retry-after', '1');
        res.end('slow down');
        return;
      }
      res.end('ok');
    });
    const http = createHttpBalancer({ origins: [server.origin] });
    const pushBacks: unknown[] = [];
    http.on('failure', ({ error }) => pushBacks.push(error));
    const res = await http.request({ method: 'POST', path: '/', body: 'a' });
    expect(res.statusCode).toBe(200);
    expect(server.arrivals).toHaveLength(2);
    expect(server.arrivals[1]! - server.arrivals[0]!).toBeGreaterThanOrEqual(900);
    const pb = pushBacks[0] as PushBackError & { statusCode: number };
    expect(pb).toBeInstanceOf(PushBackError);
    expect(pb.retryAfterMs).toBe(1000);
    expect(pb.statusCode).toBe(429);
    expect(pb.message).toContain('429');
    await http.close();
  });

  it('turns 503 + Retry-After (HTTP-date) into push-back, and a bare 503 into a retryable HttpError', async () => {
    const server = await serve((req, res) => {
      res.statusCode = 503;
      if (req.url === '/dated')
        res.setHeader('retry-after', new Date(Date.now() + 30_000).toUTCString());
      res.end('busy');
    });
    const http = createHttpBalancer({ origins: [server.origin], retry: false });
    const dated = await http.request({ path: '/dated' }).catch((e) => e);
    expect(dated).toBeInstanceOf(PushBackError);
    expect((dated as PushBackError).retryAfterMs).toBeGreaterThan(25_000);
    expect((dated as PushBackError).retryAfterMs).toBeLessThanOrEqual(30_000);
    const bare = await http.request({ path: '/bare' }).catch((e) => e);
    expect(bare).toBeInstanceOf(HttpError);
    expect((bare as HttpError).retryable).toBe(true);
    await http.close();
  });

  it('stops a huge streamed body at bodyLimitBytes, without buffering it', async () => {
    const chunk = Buffer.alloc(64 * 1024, 120);
    let written = 0;
    let aborted = false;
    const server = await serve((_req, res) => {
      const total = 50 * 1024 * 1024;
      const pump = () => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', () => setTimeout(pump, 1));
            return;
          }
        }
        res.end();
      };
      res.on('close', () => {
        aborted = !res.writableFinished;
      });
      pump();
    });
    const before = process.memoryUsage();
    const http = createHttpBalancer({ origins: [server.origin], bodyLimitBytes: 1024 * 1024 });
    const error = await http.request({ path: '/big' }).catch((e) => e);
    const after = process.memoryUsage();
    expect(error).toBeInstanceOf(BodyTooLargeError);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as BodyTooLargeError).retryable).toBe(false);
    expect((error as BodyTooLargeError).limitBytes).toBe(1024 * 1024);
    for (let i = 0; i < 50 && !aborted; i++) await new Promise((r) => setTimeout(r, 10));
    expect(aborted).toBe(true);
    expect(written).toBeLessThan(20 * 1024 * 1024);
    const grown = after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers);
    expect(grown).toBeLessThan(16 * 1024 * 1024);
    await http.close();
  });

  it('refuses a declared Content-Length over the limit before reading', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('content-length', String(10 * 1024 * 1024));
      res.write('x');
    });
    const http = createHttpBalancer({ origins: [server.origin], bodyLimitBytes: 1024 });
    const error = await http.request({ path: '/' }).catch((e) => e);
    expect(error).toBeInstanceOf(BodyTooLargeError);
    await http.close();
  });

  it('cuts a shard that never answers: headersTimeoutMs, and the run timeoutMs', async () => {
    const server = await serve(() => {});
    const http = createHttpBalancer({
      origins: [server.origin],
      headersTimeoutMs: 200,
      retry: false,
    });
    const byHeaders = await http.request({ path: '/' }).catch((e) => e);
    expect((byHeaders as { code: string }).code).toBe('UND_ERR_HEADERS_TIMEOUT');
    const byRun = await http.request({ path: '/', timeoutMs: 100 }).catch((e) => e);
    expect(byRun).toBeInstanceOf(TimeoutError);
    await http.close({ drain: false });
  });

  it('feeds the load header into the shard (stats().reportedLoad), ignoring junk', async () => {
    let value = '7.5';
    const server = await serve((_req, res) => {
      res.setHeader('x-shard-load', value);
      res.end();
    });
    const http = createHttpBalancer({ origins: [server.origin] });
    await http.request({ path: '/' });
    expect(http.stats().shards[0]!.reportedLoad).toBe(7.5);
    value = 'NaN';
    await http.request({ path: '/' });
    expect(http.stats().shards[0]!.reportedLoad).toBe(7.5);
    await http.close();
    const off = createHttpBalancer({ origins: [server.origin], loadHeader: false });
    await off.request({ path: '/' });
    expect(off.stats().shards[0]!.reportedLoad).toBeUndefined();
    await off.close();
  });
});

describe('request bodies', () => {
  it('sends a Readable and an async iterable', async () => {
    const server = await serve((_req, res, body) => res.end(body));
    const http = createHttpBalancer({ origins: [server.origin] });
    const a = await http.request({
      method: 'POST',
      body: Readable.from([Buffer.from('ab'), Buffer.from('cd')]),
    });
    expect(a.text()).toBe('abcd');
    async function* gen() {
      yield 'x';
      yield Buffer.from('y');
    }
    const b = await http.request({ method: 'POST', body: gen() });
    expect(b.text()).toBe('xy');
    await http.close();
  });

  it('never retries a one-shot stream after a 5xx, even when told it is idempotent', async () => {
    const bad = await serve((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    const good = await serve((_req, res, body) => res.end(body));
    const http = createHttpBalancer({ origins: [bad.origin, good.origin], picker: roundRobin() });
    const error = await http
      .request({ method: 'PUT', body: Readable.from(['data']), idempotent: true })
      .catch((e) => e);
    expect((error as HttpError).statusCode).toBe(500);
    expect(good.requests).toBe(0);
    await http.close();
  });

  it('replays a body given as a function on each attempt', async () => {
    const bad = await serve((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    const good = await serve((_req, res, body) => res.end(body));
    const http = createHttpBalancer({ origins: [bad.origin, good.origin], picker: roundRobin() });
    let made = 0;
    const res = await http.request({
      method: 'PUT',
      body: () => {
        made++;
        return Readable.from(['fresh']);
      },
    });
    expect(res.text()).toBe('fresh');
    expect(made).toBe(2);
    await http.close();
  });

  it('rejects a body of the wrong kind with ConfigError', async () => {
    const server = await serve((_req, res) => res.end());
    const http = createHttpBalancer({ origins: [server.origin] });
    await expect(http.request({ body: 42 as never })).rejects.toBeInstanceOf(ConfigError);
    await expect(http.request({ path: 'no-slash' })).rejects.toBeInstanceOf(ConfigError);
    await expect(http.request({ nope: 1 } as never)).rejects.toBeInstanceOf(ConfigError);
    expect(server.requests).toBe(0);
    // Counted like run() calls turned away: completed + failed + refused is every settled call.
    expect(http.stats()).toMatchObject({ completed: 0, failed: 0, refused: 3 });
    await http.close();
  });
});
