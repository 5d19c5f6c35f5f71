/**
 * Issue #31: headers made per attempt (a function) and by a signing hook are secrets — every
 * value, whatever its name. Planted there, against shards that decode the body and echo the
 * whole request (headers and decoded body) in their error pages, no error, event payload (pick,
 * route, failure, retry, transit …), stats value or OpenTelemetry export may hold any of them.
 */
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer, roundRobin } from '../../src/http/index.js';
import { instrument } from '../../src/otel/index.js';
import { decode } from '../http/decoding-servers.js';
import { startServer, type TestServer } from '../http/servers.js';
import { TestReader } from '../otel/metrics.js';
import { collectEvents, leaks, outcomeOf, SECRET } from './scan.js';

const headers = (_shard: unknown, attempt: number) => ({
  authorization: `Bearer ${SECRET.headerFnToken}`,
  // Not a credential's name: a secret all the same, since the function made it.
  'x-tenant-proof': `${SECRET.headerFnProof}-${attempt}`,
  'content-type': 'application/json',
});
const sign = () => ({ 'x-request-mac': SECRET.signature });
const BODY = JSON.stringify({
  rows: Array.from({ length: 60 }, (_, i) => ({ id: i, note: 'x'.repeat(20) })),
  password: SECRET.bodyPassword,
});

let echoing: TestServer;
let fine: TestServer;
beforeAll(async () => {
  echoing = await startServer(async (req, res, body) => {
    const decoded = (
      await decode(req.headers['content-encoding'] as string | undefined, body)
    ).toString();
    const status = req.url?.startsWith('/429') ? 429 : req.url?.startsWith('/5') ? 500 : 401;
    res.statusCode = status;
    if (status === 429) res.setHeader('retry-after', '1');
    const lines = Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`);
    res.end(
      `${JSON.stringify({ headers: req.headers, body: decoded })}\n${lines.join('\n')}\n\n${decoded}`,
    );
  });
  fine = await startServer((_req, res) => res.end('ok'));
});
afterAll(async () => {
  await Promise.all([echoing.close(), fine.close()]);
});

describe('secrets from headers functions and sign hooks', () => {
  it('the scanner finds each planted secret (it can fail)', () => {
    expect(leaks(headers(undefined, 1)).sort()).toEqual(
      [SECRET.headerFnProof, SECRET.headerFnToken].sort(),
    );
    expect(leaks(sign())).toEqual([SECRET.signature]);
  });

  it('echoed by failing shards, retried, compressed or not: never in errors, events, stats or metrics', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const http: HttpBalancer = createHttpBalancer({
      origins: [echoing.origin, fine.origin],
      picker: roundRobin(),
      retry: { attempts: 2, budget: false, backoff: { baseMs: 0, maxMs: 1 } },
      health: false,
      compression: 'gzip',
    });
    instrument(http, { meterProvider: provider });
    const events = collectEvents(http);
    const outcomes: unknown[] = [];
    for (const path of ['/401', '/500', '/429']) {
      for (const compression of ['gzip', 'zstd', false] as const) {
        outcomes.push(
          await outcomeOf(() =>
            http.request({ method: 'PUT', path, body: BODY, headers, sign, compression }),
          ),
        );
      }
    }
    // Without retries, straight to the echoing shard: the error carries its excerpt.
    const once = createHttpBalancer({ origins: [echoing.origin], retry: false, compression: 'br' });
    const onceEvents = collectEvents(once);
    const errors = [
      await outcomeOf(() =>
        once.request({ method: 'POST', path: '/401', body: BODY, headers, sign }),
      ),
      await outcomeOf(() =>
        once.run((shard, ctx) =>
          once.sendTo(shard, { method: 'POST', path: '/500', body: BODY, headers, sign }, ctx),
        ),
      ),
    ];
    // A short body is a secret whole (a shard may quote it): compressed, its echo is of what was
    // compressed, and that is what is scrubbed.
    errors.push(
      await outcomeOf(() =>
        once.request({
          method: 'POST',
          path: '/401',
          body: `note=${SECRET.bodyWhole}`,
          compression: { codec: 'gzip', minBytes: 0 },
        }),
      ),
    );
    const excerpt = (errors[0] as { excerpt?: string }).excerpt ?? '';
    // The echo is still useful: what is no secret stays.
    expect(excerpt).toContain('x-tenant-proof');
    expect(excerpt).toContain('[redacted]');
    const exported = JSON.stringify((await reader.collect()).resourceMetrics);
    expect(exported).toContain('shardwise.bytes');
    expect(events.get('transit')!.length).toBeGreaterThan(0);
    expect(events.get('retry')!.length).toBeGreaterThan(0);
    // A 401 from the echoing shard fails the request (round robin sends some there first).
    expect(outcomes.some((o) => o instanceof Error)).toBe(true);
    for (const outcome of [...outcomes, ...errors]) expect(leaks(outcome)).toEqual([]);
    expect(errors.every((e) => e instanceof Error)).toBe(true);
    for (const [name, payloads] of [...events, ...onceEvents]) {
      expect(leaks(payloads), name).toEqual([]);
    }
    expect(leaks(http.stats())).toEqual([]);
    expect(leaks(once.stats())).toEqual([]);
    expect(leaks(exported)).toEqual([]);
    await Promise.all([http.close(), once.close(), provider.shutdown()]);
  });

  it('what a function or hook returns wrong is refused without echoing it', async () => {
    const http = createHttpBalancer({ origins: [fine.origin], retry: false });
    const mistakes: [string, () => Promise<unknown>][] = [
      [
        'a header value that is not a string',
        () =>
          http.request({ headers: () => ({ authorization: [SECRET.headerFnToken, 7] }) as never }),
      ],
      [
        'a header value with CRLF',
        () =>
          http.request({
            headers: () => ({ 'x-proof': `${SECRET.headerFnProof}\r\nx-evil: 1` }),
          }),
      ],
      [
        'a sign hook returning a bad name',
        () => http.request({ sign: () => ({ 'bad name': SECRET.signature }) }),
      ],
      [
        'a content-encoding beside compression',
        () =>
          http.request({
            method: 'POST',
            body: BODY,
            compression: 'gzip',
            headers: () => ({ 'content-encoding': SECRET.headerFnProof }),
          }),
      ],
    ];
    for (const [what, call] of mistakes) {
      const error = await outcomeOf(call);
      expect(error, what).toBeInstanceOf(Error);
      expect(leaks(error), what).toEqual([]);
    }
    await http.close();
  });
});
