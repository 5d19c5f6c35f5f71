import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { startServer, type TestServer } from '../http/servers.js';

const API_KEY = 'sk_live_Q7wZ2pL9xR4tB8nV3mK6cY1dF5gH0jS';

async function fail(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

function everyRendering(e: Error): string {
  return [
    e.message,
    e.stack,
    JSON.stringify(e),
    inspect(e, { showHidden: true, depth: 10 }),
    (e as { excerpt?: string }).excerpt,
  ].join('\n');
}

describe('secrets in HttpError excerpts', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer((req, res, body) => {
      res.statusCode = 401;
      if (req.url === '/boundary') {
        // An echo of the API key, placed so that the 1 KiB excerpt cut falls inside it.
        const pad = 'x'.repeat(990);
        res.end(`${pad} rejected key ${String(req.headers['x-api-key'])} (unknown)`);
      } else if (req.url === '/json-echo') {
        // A JSON API quoting the body it could not accept, as JSON does: escaped.
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: 'unauthorized', request: body.toString() }));
      } else if (req.url === '/value-echo') {
        const parsed = JSON.parse(body.toString()) as { password: string };
        res.end(`login failed for secret ${parsed.password}`);
      } else res.end('no');
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('a header secret echoed across the 1 KiB excerpt boundary is not partly leaked', async () => {
    const http = createHttpBalancer({ origins: [server.origin] });
    const err = await fail(
      http.request({ method: 'GET', path: '/boundary', headers: { 'x-api-key': API_KEY } }),
    );
    await http.close();
    expect((err as { statusCode?: number }).statusCode).toBe(401);
    const text = everyRendering(err);
    // The first 16 characters of the key: a real prefix of the credential.
    expect(text).not.toContain(API_KEY.slice(0, 16));
  });

  it('a short JSON body echoed JSON-escaped is scrubbed ("for a body up to 4 KiB, the body itself")', async () => {
    const http = createHttpBalancer({ origins: [server.origin] });
    const body = JSON.stringify({ id: 7, ssn: 'PlantSsnValue99x', note: 'private' });
    const err = await fail(
      http.request({
        method: 'POST',
        path: '/json-echo',
        body,
        headers: { 'content-type': 'application/json' },
      }),
    );
    await http.close();
    expect(everyRendering(err)).not.toContain('PlantSsnValue99x');
  });

  it('the value of a credential-named body field is scrubbed for a string body (control)', async () => {
    const http = createHttpBalancer({ origins: [server.origin] });
    const body = JSON.stringify({ user: 'ada', password: 'PlantBodyPwFn1x' });
    const err = await fail(http.request({ method: 'POST', path: '/value-echo', body }));
    await http.close();
    expect(everyRendering(err)).not.toContain('PlantBodyPwFn1x');
  });

  it('the value of a credential-named body field is scrubbed for a body given as a function', async () => {
    const http = createHttpBalancer({ origins: [server.origin] });
    const body = JSON.stringify({ user: 'ada', password: 'PlantBodyPwFn1x' });
    const err = await fail(http.request({ method: 'POST', path: '/value-echo', body: () => body }));
    await http.close();
    expect((err as { statusCode?: number }).statusCode).toBe(401);
    expect(everyRendering(err)).not.toContain('PlantBodyPwFn1x');
  });

  it('an origin with a query token: the ConfigError does not echo it', () => {
    let error: unknown;
    try {
      createHttpBalancer({ origins: ['http://127.0.0.1:9/?token=PlantOriginTok1x'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    expect(everyRendering(error as Error)).not.toContain('PlantOriginTok1x');
  });
});

describe('secrets in ingest/createWriteStream request-shape mistakes', () => {
  const TOKEN = 'PlantIngestHdrTok1x';
  it('http.ingest({ headers: <a string> }) names the type, never the value', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    let error: unknown;
    try {
      await http.ingest([{ id: 1 }], {
        path: '/ingest',
        headers: `authorization: Bearer ${TOKEN}` as never,
      });
    } catch (e) {
      error = e;
    }
    await http.close();
    expect(error).toBeInstanceOf(Error);
    expect(everyRendering(error as Error)).not.toContain(TOKEN);
  });

  it('http.createWriteStream({ headers: <a string> }) names the type, never the value', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    let error: unknown;
    try {
      http.createWriteStream({ path: '/ingest', headers: `Bearer ${TOKEN}` as never });
    } catch (e) {
      error = e;
    }
    await http.close();
    expect(error).toBeInstanceOf(Error);
    expect(everyRendering(error as Error)).not.toContain(TOKEN);
  });

  it('http.ingest({ headers: { authorization: <a number-ish object> } }) never echoes it', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    let error: unknown;
    const summary = await http
      .ingest([{ id: 1 }], {
        path: '/ingest',
        headers: { authorization: { token: TOKEN } } as never,
        batch: { lingerMs: 0 },
      })
      .catch((e) => {
        error = e;
        return undefined;
      });
    await http.close();
    const text = [
      error === undefined ? '' : everyRendering(error as Error),
      inspect(summary, { depth: 10, showHidden: true }),
    ].join('\n');
    expect(text).not.toContain(TOKEN);
  });
});
