import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { startServers, type TestServer } from './servers.js';

const SECRET = 'SECRET123';

/** JSON that survives cycles (a circular reference prints as "[cycle]"). */
function json(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[cycle]';
      seen.add(v);
    }
    return typeof v === 'bigint' ? String(v) : v;
  });
}

function exposes(value: unknown): boolean {
  return (
    json(value).includes(SECRET) ||
    inspect(value, { depth: 8, showHidden: true, getters: false }).includes(SECRET) ||
    String(value).includes(SECRET)
  );
}

describe('secrets in request headers', () => {
  let servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  it('appear in no error, event payload or stats, for 4xx, 5xx and refused connections', async () => {
    servers = await startServers(2, (req, res) => {
      // The server sees the header (it was sent) but does not echo it.
      res.statusCode =
        req.headers.authorization === `Bearer ${SECRET}` ? (req.url === '/bad' ? 401 : 500) : 200;
      res.end('denied');
    });
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 } },
    });
    const payloads: unknown[] = [];
    for (const event of [
      'pick',
      'success',
      'failure',
      'retry',
      'eject',
      'restore',
      'panic',
    ] as const) {
      http.on(event, (payload: unknown) => payloads.push(payload));
    }
    const headers = {
      authorization: `Bearer ${SECRET}`,
      cookie: `s=${SECRET}`,
      'x-api-key': SECRET,
    };
    const errors: unknown[] = [];
    for (const path of ['/bad', '/boom', `/q?token=${SECRET}`]) {
      errors.push(await http.request({ method: 'PUT', path, headers, body: 'x' }).catch((e) => e));
    }
    await servers[1]!.close();
    errors.push(
      await http.request({ method: 'PUT', path: '/', headers, body: 'x' }).catch((e) => e),
    );
    expect(exposes(headers)).toBe(true); // the probe itself finds the secret
    expect(errors.every((e) => e instanceof Error)).toBe(true);
    expect(payloads.length).toBeGreaterThan(0);
    for (const e of errors) expect(exposes(e)).toBe(false);
    for (const p of payloads) expect(exposes(p)).toBe(false);
    expect(exposes(http.stats())).toBe(false);
    await http.close();
  });
});
