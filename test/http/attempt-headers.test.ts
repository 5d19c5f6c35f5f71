/**
 * Credentials per attempt: a `headers` function is called once for each attempt, with its shard
 * and number, and its headers are what that attempt sends; a `sign` hook sees the final method,
 * URL, headers and body bytes — exactly the bytes the shard receives — and its headers are added.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createHttpBalancer,
  type HttpHeaders,
  roundRobin,
  type SignRequest,
} from '../../src/http/index.js';
import { type DecodingServer, ndjson, startDecodingServer } from './decoding-servers.js';

const BODY = ndjson(200);
const sha = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

let fails: DecodingServer[];
let ok: DecodingServer;
beforeAll(async () => {
  fails = [
    await startDecodingServer({ status: () => 503 }),
    await startDecodingServer({ status: () => 503 }),
  ];
  ok = await startDecodingServer();
});
afterAll(async () => {
  await Promise.all([...fails, ok].map((s) => s.close()));
});

describe('headers: (shard, attempt) => headers', () => {
  it('is called once per attempt, and each attempt sends its own headers', async () => {
    const http = createHttpBalancer({
      origins: [...fails, ok].map((s) => s.origin),
      picker: roundRobin(),
      retry: { attempts: 3, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
      health: false,
    });
    const calls: [string, number][] = [];
    const res = await http.request({
      method: 'PUT',
      path: '/tokens',
      body: BODY,
      headers: async (shard, attempt) => {
        calls.push([shard.id, attempt]);
        await new Promise((resolve) => setImmediate(resolve));
        return { authorization: `Bearer token-${attempt}`, 'content-type': 'application/x-ndjson' };
      },
    });
    expect(res.statusCode).toBe(200);
    expect(calls).toEqual([
      [fails[0]!.origin, 1],
      [fails[1]!.origin, 2],
      [ok.origin, 3],
    ]);
    const sent = [fails[0]!, fails[1]!, ok].map((s) => s.received.at(-1)!.headers.authorization);
    expect(sent).toEqual(['Bearer token-1', 'Bearer token-2', 'Bearer token-3']);
    await http.close();
  });

  it('an attempt that ends while its headers are made sends nothing', async () => {
    const http = createHttpBalancer({ origins: [ok.origin], retry: false });
    let release!: (h: HttpHeaders) => void;
    const before = ok.received.length;
    const run = http.request({
      method: 'POST',
      path: '/late',
      body: BODY,
      timeoutMs: 20,
      headers: () => new Promise<HttpHeaders>((resolve) => (release = resolve)),
    });
    await expect(run).rejects.toThrow(/20 ms/);
    release({ authorization: 'Bearer late' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ok.received.length).toBe(before);
    expect(http.stats().bytes.wire).toBe(0);
    await http.close();
  });

  it('what it returns is checked as headers are; a throw fails the attempt with its error', async () => {
    const http = createHttpBalancer({ origins: [ok.origin], retry: false });
    const bad = await http
      .request({ headers: () => ({ authorization: 7 }) as never })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ConfigError);
    expect((bad as ConfigError).field).toBe('request.headers().authorization');
    const notObject = await http
      .request({ headers: (() => 'authorization: x') as never })
      .catch((e: unknown) => e);
    expect((notObject as ConfigError).field).toBe('request.headers()');
    const thrown = await http
      .request({
        headers: () => {
          throw new Error('token service down');
        },
      })
      .catch((e: unknown) => e);
    expect((thrown as Error).message).toBe('token service down');
    await http.close();
  });
});

describe('sign(request)', () => {
  it('sees the final method, URL, headers and body bytes: the shard gets exactly what it hashed', async () => {
    const http = createHttpBalancer({ origins: [ok.origin] });
    const seen: SignRequest[] = [];
    const sign = (request: SignRequest) => {
      seen.push(request);
      return {
        'x-body-sha256': sha(request.body!),
        'X-Signed': request.headers['x-tenant'] as string,
      };
    };
    const before = ok.received.length;
    const bodies = [
      { body: BODY, compression: 'gzip' as const },
      { body: BODY },
      { body: Buffer.from(BODY), compression: 'zstd' as const },
      { body: 'short', compression: 'br' as const },
      { body: null },
    ];
    for (const b of bodies) {
      await http.request({
        method: 'POST',
        path: '/signed?v=1',
        headers: { 'x-tenant': 't1' },
        sign,
        ...b,
      });
    }
    const got = ok.received.slice(before);
    expect(got.map((r) => r.headers['x-body-sha256'])).toEqual(got.map((r) => sha(r.wire)));
    expect(got.map((r) => r.headers['x-signed'])).toEqual(['t1', 't1', 't1', 't1', 't1']);
    expect(got.map((r) => r.encoding)).toEqual(['gzip', undefined, 'zstd', undefined, undefined]);
    expect(seen.map((s) => [s.method, s.url, s.path, s.attempt, s.shardId])).toEqual(
      bodies.map(() => ['POST', `${ok.origin}/signed?v=1`, '/signed?v=1', 1, ok.origin]),
    );
    expect(seen[0]!.headers).toEqual({ 'x-tenant': 't1', 'content-encoding': 'gzip' });
    expect(seen[4]!.body).toEqual(new Uint8Array(0));
    await http.close();
  });

  it('replaces a header of the same name in any case; a stream body is not read ahead', async () => {
    const http = createHttpBalancer({ origins: [ok.origin] });
    const before = ok.received.length;
    let streamBody: unknown = 'unset';
    await http.request({
      method: 'POST',
      path: '/stream',
      headers: { Authorization: 'Bearer stale' },
      body: Readable.from([BODY]),
      sign: ({ body }) => {
        streamBody = body;
        return { authorization: 'Bearer fresh' };
      },
    });
    const [got] = ok.received.slice(before);
    expect(got!.headers.authorization).toBe('Bearer fresh');
    expect(got!.raw.toString()).toBe(BODY);
    expect(streamBody).toBeUndefined();
    await http.close();
  });

  it('a hook that returns no headers adds none; a bad return is a ConfigError by name', async () => {
    const http = createHttpBalancer({ origins: [ok.origin], retry: false });
    await expect(http.request({ sign: () => undefined })).resolves.toMatchObject({
      statusCode: 200,
    });
    const bad = await http
      .request({ sign: () => ({ 'x-sig': ['a', 5] }) as never })
      .catch((e: unknown) => e);
    expect((bad as ConfigError).field).toBe('request.sign().x-sig');
    const notFn = await http.request({ sign: 'hmac' as never }).catch((e: unknown) => e);
    expect((notFn as ConfigError).field).toBe('request.sign');
    expect(http.stats().refused).toBe(1);
    await http.close();
  });

  it('sendTo() takes headers functions and sign hooks too, with the run’s attempt', async () => {
    const http = createHttpBalancer({ origins: [ok.origin] });
    const attempts: number[] = [];
    const before = ok.received.length;
    await http.run((shard, ctx) =>
      http.sendTo(
        shard,
        {
          method: 'POST',
          path: '/sendto',
          body: BODY,
          headers: (_s, attempt) => {
            attempts.push(attempt);
            return { authorization: `Bearer ${attempt}` };
          },
          sign: ({ body }) => ({ 'x-body-sha256': sha(body!) }),
        },
        ctx,
      ),
    );
    const [got] = ok.received.slice(before);
    expect(attempts).toEqual([1]);
    expect(got!.headers.authorization).toBe('Bearer 1');
    expect(got!.headers['x-body-sha256']).toBe(sha(BODY));
    await http.close();
  });
});
