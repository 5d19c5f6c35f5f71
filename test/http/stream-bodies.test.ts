import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { PushBackError } from '../../src/base/errors.js';
import { createHttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { deadPort, startServer, type TestServer } from './servers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (e) {
    return e;
  }
}

describe('one-shot streamed bodies', () => {
  it('a streamed POST answered 429: the run rejects with the push-back, not a ConfigError about the stream', async () => {
    const a = await startServer((_req, res) => {
      res.statusCode = 429;
      res.setHeader('retry-after', '0');
      res.end('slow down');
    });
    const b = await startServer((_req, res) => res.end('ok'));
    servers.push(a, b);
    const http = createHttpBalancer({
      origins: [a.origin, b.origin],
      picker: roundRobin(),
      retry: { attempts: 3, backoff: { baseMs: 0, maxMs: 1 } },
      timeoutMs: 5_000,
    });
    const events: string[] = [];
    http.on('retry', () => events.push('retry'));
    const result = await outcome(
      http.request({
        method: 'POST',
        path: '/ingest',
        body: Readable.from([Buffer.from('{"id":1}\n')]),
      }),
    );
    await http.close();
    // Refused for good with the shard's own answer: the body is gone, nothing is resent.
    expect(result).toBeInstanceOf(PushBackError);
    const e = result as PushBackError & { statusCode?: number; notSent?: boolean };
    expect(e.statusCode).toBe(429);
    expect(e.notSent).toBe(false);
    expect(e.message).toMatch(/one-shot stream body was read, so it is not retried/);
    expect(events).toEqual([]);
    expect(b.requests).toBe(0);
  });

  it('a streamed POST to a refused shard goes whole to the next shard', async () => {
    const got: string[] = [];
    const b = await startServer((_req, res, body) => {
      got.push(body.toString());
      res.end('ok');
    });
    servers.push(b);
    const port = await deadPort();
    const http = createHttpBalancer({
      origins: [`http://127.0.0.1:${port}`, b.origin],
      picker: roundRobin(),
      retry: { attempts: 3, backoff: { baseMs: 0, maxMs: 1 } },
      timeoutMs: 5_000,
    });
    const res = await outcome(
      http.request({
        method: 'POST',
        path: '/ingest',
        body: Readable.from([Buffer.from('line-1\n'), Buffer.from('line-2\n')]),
      }),
    );
    await http.close();
    expect(res).not.toBeInstanceOf(Error);
    expect(got).toEqual(['line-1\nline-2\n']);
  });
});
