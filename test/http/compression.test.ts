/**
 * `request({ compression })` on real shards that decompress what they get: the body arrives as
 * exactly the bytes given, with its `content-encoding`; short bodies go as they are; a retry
 * sends the very bytes the first attempt sent (compressed once); the balancer's default applies
 * to text and bytes, and a request may turn it off.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Compressed,
  ConfigError,
  createCompressor,
  createHttpBalancer,
  roundRobin,
} from '../../src/http/index.js';
import { type DecodingServer, ndjson, startDecodingServer } from './decoding-servers.js';

const BODY = ndjson(500);

let a: DecodingServer;
let b: DecodingServer;
let failingFirst: DecodingServer;
beforeAll(async () => {
  a = await startDecodingServer();
  b = await startDecodingServer();
  failingFirst = await startDecodingServer({ status: () => 500 });
});
afterAll(async () => {
  await Promise.all([a.close(), b.close(), failingFirst.close()]);
});

describe('request({ compression })', () => {
  for (const codec of ['gzip', 'br', 'zstd'] as const) {
    it(`${codec}: the shard decodes exactly the NDJSON sent`, async () => {
      const http = createHttpBalancer({ origins: [a.origin] });
      const before = a.received.length;
      const res = await http.request({
        method: 'POST',
        path: `/${codec}`,
        body: BODY,
        compression: codec,
      });
      expect(res.statusCode).toBe(200);
      const got = a.received.slice(before);
      expect(got).toHaveLength(1);
      expect(got[0]!.encoding).toBe(codec);
      expect(got[0]!.raw.toString()).toBe(BODY);
      expect(got[0]!.wire.length).toBeLessThan(Buffer.byteLength(BODY) / 4);
      // The ledger saw the same bytes the shard did.
      expect(http.stats().bytes).toEqual({
        raw: Buffer.byteLength(BODY),
        wire: got[0]!.wire.length,
        received: 2,
      });
      await http.close();
    });
  }

  it('a body shorter than minBytes is sent as it is, with no content-encoding', async () => {
    const http = createHttpBalancer({ origins: [a.origin] });
    const before = a.received.length;
    const small = ndjson(5);
    await http.request({ method: 'POST', path: '/small', body: small, compression: 'gzip' });
    await http.request({
      method: 'POST',
      path: '/over',
      body: Buffer.from(small),
      compression: { codec: 'gzip', minBytes: 100 },
    });
    const [plain, over] = a.received.slice(before);
    expect([plain!.encoding, plain!.wire.toString()]).toEqual([undefined, small]);
    expect([over!.encoding, over!.raw.toString()]).toEqual(['gzip', small]);
    await http.close();
  });

  it('a retry sends the very bytes the first attempt sent: first shard 500, second 200', async () => {
    const http = createHttpBalancer({
      origins: [failingFirst.origin, b.origin],
      picker: roundRobin(),
      retry: { attempts: 2, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
    });
    const seen: Uint8Array[] = [];
    const first = failingFirst.received.length;
    const second = b.received.length;
    const res = await http.request({
      method: 'PUT',
      path: '/retried',
      body: BODY,
      compression: 'zstd',
      // The hook sees each attempt's body: the same object twice means one compression.
      sign: ({ body }) => {
        seen.push(body!);
        return undefined;
      },
    });
    expect(res.shardId).toBe(b.origin);
    const sent = [failingFirst.received[first]!, b.received[second]!];
    expect(sent.map((r) => r.encoding)).toEqual(['zstd', 'zstd']);
    expect(sent[0]!.wire.equals(sent[1]!.wire)).toBe(true);
    expect(sent[1]!.raw.toString()).toBe(BODY);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBe(seen[1]);
    // Both attempts' bytes are in the ledger, each on its shard.
    const stats = http.stats();
    expect(stats.shards.map((s) => s.bytes.wire)).toEqual([
      sent[0]!.wire.length,
      sent[1]!.wire.length,
    ]);
    expect(stats.bytes.raw).toBe(2 * Buffer.byteLength(BODY));
    await http.close();
  });

  it('the balancer’s default compresses text and bytes; a request may turn it off', async () => {
    const http = createHttpBalancer({ origins: [a.origin], compression: 'br' });
    const before = a.received.length;
    await http.request({ method: 'POST', path: '/default', body: BODY });
    await http.request({ method: 'POST', path: '/bytes', body: Buffer.from(BODY) });
    await http.request({ method: 'POST', path: '/off', body: BODY, compression: false });
    await http.request({ method: 'POST', path: '/gzip', body: BODY, compression: 'gzip' });
    // A stream cannot be compressed once: under the default it goes as it is.
    await http.request({ method: 'POST', path: '/stream', body: Readable.from([BODY]) });
    await http.request({ method: 'GET', path: '/nobody' });
    const got = a.received.slice(before).map((r) => [r.path, r.encoding, r.raw.toString()]);
    expect(got).toEqual([
      ['/default', 'br', BODY],
      ['/bytes', 'br', BODY],
      ['/off', undefined, BODY],
      ['/gzip', 'gzip', BODY],
      ['/stream', undefined, BODY],
      ['/nobody', undefined, ''],
    ]);
    await http.close();
  });

  it('a Compressed body is sent as it is with its encoding (the way for sendTo and retries)', async () => {
    const http = createHttpBalancer({ origins: [a.origin] });
    const compressed: Compressed = await createCompressor('gzip').compress(BODY);
    const before = a.received.length;
    await http.run((shard, ctx) =>
      http.sendTo(shard, { method: 'POST', path: '/sendto', body: compressed }, ctx),
    );
    // Given to request() under a default, it is not compressed again.
    const withDefault = createHttpBalancer({ origins: [a.origin], compression: 'zstd' });
    await withDefault.request({ method: 'POST', path: '/request', body: compressed });
    const got = a.received.slice(before);
    expect(got.map((r) => [r.encoding, r.raw.toString()])).toEqual([
      ['gzip', BODY],
      ['gzip', BODY],
    ]);
    expect(got[0]!.wire.equals(Buffer.from(compressed.body as Uint8Array))).toBe(true);
    expect(http.stats().bytes).toEqual({
      raw: compressed.rawBytes,
      wire: compressed.wireBytes,
      received: 2,
    });
    await Promise.all([http.close(), withDefault.close()]);
  });

  it('mistakes are ConfigErrors, counted as refused, and nothing is sent', async () => {
    const http = createHttpBalancer({ origins: [a.origin] });
    const before = a.received.length;
    const outcomes = await Promise.all([
      http
        .request({ method: 'POST', body: Readable.from([BODY]), compression: 'gzip' })
        .catch((e: unknown) => e),
      http
        .request({ method: 'POST', body: BODY, compression: 'lz4' as never })
        .catch((e: unknown) => e),
      http
        .request({
          method: 'POST',
          body: BODY,
          compression: 'gzip',
          headers: { 'Content-Encoding': 'identity' },
        })
        .catch((e: unknown) => e),
    ]);
    expect(outcomes.map((e) => [e instanceof ConfigError, (e as ConfigError).field])).toEqual([
      [true, 'request.compression'],
      [true, 'request.compression'],
      [true, 'request.headers.Content-Encoding'],
    ]);
    expect(http.stats().refused).toBe(3);
    expect(a.received.length).toBe(before);
    expect(() =>
      createHttpBalancer({ origins: [a.origin], compression: { codec: 'gzip', level: 10 } }),
    ).toThrow(/`compression\.level` must be an integer from 1 to 9 for gzip/);
    await http.close();
  });
});
