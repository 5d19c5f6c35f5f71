import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer, HttpError } from '../../src/http/index.js';
import { startServer, type TestServer } from '../http/servers.js';
import { collectEvents, leaks, outcomeOf } from './scan.js';

/**
 * docs/http.md "Secrets": "an `HttpError`'s `excerpt` and message lose the request's header
 * credentials, its query values, the values of credential-named body fields (`"password": …`,
 * `token=…`) and, for a body up to 4 KiB, the body itself".
 *
 * No size bound is documented for credential-named body fields, but `bodySecrets`
 * (src/base/redact.ts) only looks at the first 64 KiB of a body (`MAX_BODY_SCAN`). A shard that quotes
 * the value of a field it could not parse, the way Elasticsearch's `mapper_parsing_exception`
 * does ("Preview of field's value: '…'"), leaks a password that sits past 64 KiB of the body:
 * a batch of a few hundred records (http.ingest's default batch is 500 records / 1 MiB).
 */
const PW = 'AtkBodyPw93x';

/** Answers 400 quoting the value of the first `"password"` field of the body, ES-style. */
function esStyle(body: Buffer): string {
  const m = /"password":"([^"]*)"/.exec(body.toString());
  return `{"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [password] of type [long] in document. Preview of field's value: '${m?.[1] ?? ''}'"},"status":400}`;
}

/** `n` filler records, then one with a password. */
function records(n: number): object[] {
  const out: object[] = [];
  for (let i = 0; i < n; i++) out.push({ id: i, note: 'x'.repeat(100) });
  out.push({ id: n, user: 'ada', password: PW });
  return out;
}

describe('secrets: a credential-named body field echoed by value', () => {
  let shard: TestServer;
  beforeAll(async () => {
    shard = await startServer((_req, res, body) => {
      res.statusCode = 400;
      res.setHeader('content-type', 'application/json');
      res.end(esStyle(body));
    });
  });
  afterAll(async () => {
    await shard.close();
  });

  it('control: in a 20 KiB body, the echoed password is scrubbed', async () => {
    const http = createHttpBalancer({ origins: [shard.origin] });
    const body = JSON.stringify(records(150));
    expect(body.length).toBeGreaterThan(4096);
    expect(body.length).toBeLessThan(64 * 1024);
    const error = await outcomeOf(() => http.request({ method: 'POST', path: '/_doc', body }));
    await http.close();
    expect(error).toBeInstanceOf(HttpError);
    expect(leaks(error, [PW])).toEqual([]);
  });

  it('request(): in an 80 KiB body, the echoed password is scrubbed too', async () => {
    const http = createHttpBalancer({ origins: [shard.origin] });
    const events = collectEvents(http);
    const body = JSON.stringify(records(700));
    expect(body.length).toBeGreaterThan(64 * 1024);
    const error = await outcomeOf(() => http.request({ method: 'POST', path: '/_doc', body }));
    await http.close();
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).excerpt).toContain("Preview of field's value");
    expect(leaks(error, [PW])).toEqual([]);
    expect(leaks([...events.values()], [PW])).toEqual([]);
  });

  it('http.ingest(): a default-size batch whose last record holds the password', async () => {
    const http = createHttpBalancer({ origins: [shard.origin] });
    const summary = await http.ingest(records(700), {
      path: '/_bulk',
      encode: 'json',
      batch: { maxRecords: 1000 },
    });
    await http.close();
    expect(summary.failed).toBe(701);
    const error = summary.failures[0]!.error;
    expect(error).toBeInstanceOf(HttpError);
    expect(leaks(error, [PW])).toEqual([]);
  });
});

/**
 * The same promise for a credential-named field whose JSON value is not a string: a numeric PIN
 * or password. A FastAPI/pydantic shard answers 422 quoting the offending `input` by value.
 */
describe('secrets: a numeric credential-named body field echoed by value', () => {
  const PIN = 73519264;
  let shard: TestServer;
  beforeAll(async () => {
    shard = await startServer((_req, res, body) => {
      const parsed = JSON.parse(body.toString()) as { password?: unknown };
      res.statusCode = 422;
      res.setHeader('content-type', 'application/json');
      // What pydantic v2 says for a number where a string is expected.
      res.end(
        JSON.stringify({
          detail: [
            {
              type: 'string_type',
              loc: ['body', 'password'],
              msg: 'Input should be a valid string',
              input: parsed.password,
            },
          ],
        }),
      );
    });
  });
  afterAll(async () => {
    await shard.close();
  });

  it('control: a string password is scrubbed from the 422', async () => {
    const http = createHttpBalancer({ origins: [shard.origin] });
    const body = JSON.stringify({ username: 'ada', password: String(PIN) });
    const error = await outcomeOf(() => http.request({ method: 'POST', path: '/login', body }));
    await http.close();
    expect(error).toBeInstanceOf(HttpError);
    expect(leaks(error, [String(PIN)])).toEqual([]);
  });

  it('a numeric password is scrubbed from the 422 too', async () => {
    const http = createHttpBalancer({ origins: [shard.origin] });
    const body = JSON.stringify({ username: 'ada', password: PIN });
    const error = await outcomeOf(() => http.request({ method: 'POST', path: '/login', body }));
    await http.close();
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).excerpt).toContain('string_type');
    expect(leaks(error, [String(PIN)])).toEqual([]);
  });
});
