/**
 * A request undici refuses at dispatch (an invalid path or header value — "a request undici
 * refused to send" is handled in src/http/classify.ts as `notSent`, `retryable: false`) must not
 * cost the shard anything. docs/http.md: "Each shard gets its own undici `Pool` with keep-alive
 * connections … reuses them". docs/reference.md, close(): "`{ drain: true }` (default) resolves once every
 * admitted run settled … Then transports release their resources (connection pools …)".
 *
 * undici's Pool marks the client whose `dispatch` threw as needing a drain that never comes: after
 * `connectionsPerShard` such requests the pool has no client left, and every later request waits
 * in its queue forever.
 */
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { ConfigError } from '../../src/index.js';
import { outcome } from '../helpers.js';
import { startServer } from './servers.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f()));
});

const BAD: [string, Record<string, unknown>][] = [
  ['a path with a space (a record id "a b" in the path)', { path: '/items/a b' }],
  [
    'a header value ending in a newline (a token read from a file)',
    { path: '/items/1', headers: { authorization: 'Bearer tok-123456\n' } },
  ],
  ['an expect: 100-continue header', { path: '/items/1', headers: { expect: '100-continue' } }],
  ['a transfer-encoding header', { path: '/items/1', headers: { 'Transfer-Encoding': 'chunked' } }],
  ['a connection header undici cannot read', { path: '/items/1', headers: { connection: 'a b' } }],
  [
    'a content-length that is not a number',
    { path: '/items/1', headers: { 'content-length': '1e3' } },
  ],
  ['a NUL in a header value', { path: '/items/1', headers: { 'x-id': 'a\u0000b' } }],
];

/** Resolves with `p`'s outcome, or `'still pending'` after `ms` (a bound, never a measure). */
function within(p: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([
    outcome(p),
    new Promise((resolve) => setTimeout(() => resolve('still pending'), ms)),
  ]);
}

describe('requests undici refuses at dispatch', () => {
  it.each(BAD)(
    '%s: connectionsPerShard of them leave the shard able to answer the next valid request',
    async (_name, bad) => {
      const s = await startServer((_req, res) => res.end('ok'));
      cleanup.push(s.close);
      const http = createHttpBalancer({
        origins: [s.origin],
        connectionsPerShard: 2,
        timeoutMs: 2_000,
        retry: false,
      });
      cleanup.push(() => http.close({ drain: false }).catch(() => {}));
      for (let i = 0; i < 2; i++) {
        // Refused before dispatch, naming the field; counted as refused, never sent.
        const error = await outcome(http.request(bad as never));
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).field).toMatch(/^request\.(path|headers\.)/);
      }
      expect(http.stats().refused).toBe(2);
      expect(s.requests).toBe(0);
      const good = await outcome(http.request({ path: '/items/2' }));
      // Observed: TimeoutError after 2 000 ms; the server saw no request; stats pending 1.
      expect((good as { statusCode?: number }).statusCode).toBe(200);
      expect(s.requests).toBe(1);
    },
  );

  it('after them, a draining close() returns', async () => {
    const s = await startServer((_req, res) => res.end('ok'));
    cleanup.push(s.close);
    const http = createHttpBalancer({
      origins: [s.origin],
      connectionsPerShard: 2,
      timeoutMs: 1_000,
      retry: false,
    });
    for (let i = 0; i < 2; i++) await outcome(http.request({ path: '/items/a b' }));
    await outcome(http.request({ path: '/items/2' })); // the request left in the pool's queue
    expect(http.stats().inFlight).toBe(0); // every run has settled
    // Observed: still pending after 5 s (pool.close() waits for the queued request forever).
    expect(await within(http.close(), 5_000)).toBeUndefined();
  });

  it("a body that does not match the caller's content-length fails once, and costs no shard", async () => {
    const servers = [
      await startServer((_req, res) => res.end('ok')),
      await startServer((_req, res) => res.end('ok')),
    ];
    for (const s of servers) cleanup.push(s.close);
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      health: { consecutiveFailures: 2 },
    });
    cleanup.push(() => http.close({ drain: false }).catch(() => {}));
    for (let i = 0; i < 4; i++) {
      const error = await outcome(
        http.request({
          method: 'PUT',
          path: '/r',
          headers: { 'content-length': '10' },
          body: 'abc',
        }),
      );
      expect((error as { code?: string }).code).toBe('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
      expect((error as { retryable?: boolean }).retryable).toBe(false);
    }
    // Not retried on the other shard (it would fail there too), and nobody ejected for it.
    const stats = http.stats();
    expect(stats.retries).toBe(0);
    expect(stats.failed).toBe(4);
    expect(stats.shards.map((s) => s.ejections)).toEqual([0, 0]);
  });

  it('a stream already read before the call is refused, not sent as an empty body', async () => {
    const s = await startServer((_req, res) => res.end('ok'));
    cleanup.push(s.close);
    const http = createHttpBalancer({ origins: [s.origin] });
    cleanup.push(() => http.close({ drain: false }).catch(() => {}));
    const body = Readable.from(['a', 'b']);
    for await (const _chunk of body) {
      // the caller's first use of the stream reads it to the end
    }
    const error = await outcome(http.request({ method: 'POST', path: '/r', body }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('request.body');
    expect(s.requests).toBe(0);
    expect(http.stats().refused).toBe(1);
  });
});
