import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { startServer, type TestServer } from '../http/servers.js';
import { collectEvents, leaks, outcomeOf, SECRET } from './scan.js';

/**
 * Issue #14: secrets planted in every place an HTTP user can put one — request headers, the query
 * string, the body — against shards that echo the whole request back in their error pages. No
 * error (message, stack, JSON, inspect), event payload or stats value may hold any of them.
 */
const HEADERS = {
  authorization: `Bearer ${SECRET.bearer}`,
  cookie: `theme=dark; session=${SECRET.cookie}`,
  'x-api-key': SECRET.apiKey,
  'content-type': 'application/json',
};
const PATH = `/ingest?token=${SECRET.queryToken}&page=2`;
const JSON_BODY = JSON.stringify({ id: 1, user: 'ada', password: SECRET.bodyPassword });

/** Echoes the whole request: as JSON, and as raw header lines and body, like a debug page. */
function echo(req: import('node:http').IncomingMessage, body: Buffer): string {
  const lines = Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`);
  return `${JSON.stringify({ url: req.url, headers: req.headers, body: body.toString() })}\n${req.method} ${req.url}\n${lines.join('\n')}\n\n${body.toString()}`;
}

describe('secrets against echoing HTTP shards', () => {
  it('the scanner finds each planted secret where it was planted (it can fail)', () => {
    expect(leaks(HEADERS).sort()).toEqual([SECRET.apiKey, SECRET.bearer, SECRET.cookie].sort());
    expect(leaks(new Error(PATH))).toEqual([SECRET.queryToken]);
    expect(leaks({ deep: { er: { cause: new Error(JSON_BODY) } } })).toEqual([SECRET.bodyPassword]);
  });

  let echoing: TestServer;
  let fine: TestServer;
  beforeAll(async () => {
    echoing = await startServer((req, res, body) => {
      const status = req.url?.startsWith('/429') ? 429 : req.url?.startsWith('/5') ? 500 : 401;
      res.statusCode = status;
      if (status === 429) res.setHeader('retry-after', '1');
      res.end(echo(req, body));
    });
    fine = await startServer((_req, res) => res.end('ok'));
  });
  afterAll(async () => {
    await Promise.all([echoing.close(), fine.close()]);
  });

  async function scanned(http: HttpBalancer, work: (http: HttpBalancer) => Promise<unknown[]>) {
    const events = collectEvents(http);
    const outcomes = await work(http);
    const stats = http.stats();
    await http.close();
    return { outcomes, events, stats };
  }

  it('a 401 echoing the request: the error holds no header value, query token or body secret', async () => {
    const http = createHttpBalancer({ origins: [echoing.origin] });
    const { outcomes, events, stats } = await scanned(http, async (h) => [
      await outcomeOf(() =>
        h.request({ method: 'POST', path: PATH, headers: HEADERS, body: JSON_BODY }),
      ),
      await outcomeOf(() =>
        h.request({ method: 'POST', path: PATH, headers: HEADERS, body: SECRET.bodyWhole }),
      ),
      await outcomeOf(() =>
        h.request({
          method: 'POST',
          path: PATH,
          headers: HEADERS,
          body: Buffer.from(`password=${SECRET.bodyPassword}&note=${SECRET.bodyWhole}`),
        }),
      ),
    ]);
    for (const outcome of outcomes) {
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as { statusCode?: number }).statusCode, String(outcome)).toBe(401);
      expect(leaks(outcome)).toEqual([]);
    }
    // The excerpt is still useful: what is not secret stays (the body itself, up to 4 KiB, is a
    // secret, as sent and JSON-escaped in the echo).
    expect((outcomes[0] as { excerpt: string }).excerpt).toContain('"url":"/ingest?[redacted]"');
    expect((outcomes[0] as { excerpt: string }).excerpt).toContain('content-type');
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
    expect(leaks(stats)).toEqual([]);
  });

  it('5xx retried across shards, push-back, and sendTo() inside run(): no event or error holds a secret', async () => {
    const http = createHttpBalancer({
      origins: [echoing.origin, fine.origin],
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 0, maxMs: 1 } },
      health: { consecutiveFailures: 1 },
    });
    const { outcomes, events, stats } = await scanned(http, async (h) => {
      const out: unknown[] = [];
      for (const path of [`/500${PATH}`, `/429${PATH}`, PATH]) {
        out.push(
          await outcomeOf(() =>
            h.request({ method: 'PUT', path, headers: HEADERS, body: JSON_BODY }),
          ),
        );
      }
      out.push(
        await outcomeOf(() =>
          h.run(
            (shard, ctx) =>
              h.sendTo(
                shard,
                { method: 'POST', path: PATH, headers: HEADERS, body: SECRET.bodyWhole },
                ctx,
              ),
            { idempotent: true },
          ),
        ),
      );
      return out;
    });
    expect(events.get('failure')!.length).toBeGreaterThan(0);
    expect(events.get('retry')!.length).toBeGreaterThan(0);
    for (const outcome of outcomes) expect(leaks(outcome)).toEqual([]);
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
    expect(leaks(stats)).toEqual([]);
  });

  it('request-shape mistakes never echo a header value, a query token or an unknown field’s value', async () => {
    const http = createHttpBalancer({ origins: [fine.origin] });
    const shard = http.shards[0]!;
    const mistakes: [string, () => Promise<unknown>][] = [
      [
        'headers as a string',
        () => http.request({ headers: `authorization: Bearer ${SECRET.bearer}` } as never),
      ],
      ['misspelled header:', () => http.request({ header: HEADERS } as never)],
      [
        'a header at the top level',
        () => http.request({ authorization: `Bearer ${SECRET.bearer}` } as never),
      ],
      [
        'a header value that is not a string',
        () => http.request({ headers: { authorization: [SECRET.bearer, 7] } } as never),
      ],
      [
        'a header value with CRLF',
        () =>
          http.request({
            method: 'POST',
            path: '/',
            headers: { authorization: `Bearer ${SECRET.bearer}\r\nx-evil: 1` },
            body: 'x',
          }),
      ],
      [
        'a path without its slash',
        () => http.request({ path: `ingest?token=${SECRET.queryToken}` }),
      ],
      [
        'a path that is not a string',
        () => http.request({ path: { token: SECRET.queryToken } } as never),
      ],
      [
        'sendTo with headers as a string',
        () => http.sendTo(shard, { headers: `cookie: session=${SECRET.cookie}` } as never),
      ],
      [
        'sendTo with an unknown field',
        () => http.sendTo(shard, { apiKey: SECRET.apiKey } as never),
      ],
      ['a run option it does not know', () => http.request({ token: SECRET.queryToken } as never)],
    ];
    for (const [what, call] of mistakes) {
      const error = await outcomeOf(call);
      expect(error, what).toBeInstanceOf(Error);
      expect(leaks(error), what).toEqual([]);
    }
    await http.close();
  });
});
