import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { ConfigError } from '../../src/index.js';
import { startServer, type TestServer } from './servers.js';

/**
 * `http.ingest` / `http.createWriteStream` options: `path` and `method` are checked as
 * `request()` checks them — once, up front, a `ConfigError` naming the option — not per batch,
 * after the source was read and every record failed.
 */
describe('http.ingest options', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer((_req, res) => res.end('ok'));
  });
  afterAll(async () => {
    await server.close();
  });

  it.each([
    ['path with a space', { path: '/bulk ingest' }, 'http.ingest.path'],
    ['method with a space', { path: '/ingest', method: 'PO ST' }, 'http.ingest.method'],
    ['empty method', { path: '/ingest', method: '' }, 'http.ingest.method'],
  ])('%s: rejects with a ConfigError before a record is taken', async (_name, options, field) => {
    const http = createHttpBalancer({ origins: [server.origin] });
    let taken = 0;
    function* rows() {
      for (let i = 0; i < 3; i++) {
        taken++;
        yield { i };
      }
    }
    const outcome = await http.ingest(rows(), options).then(
      (summary) => ({ resolved: { written: summary.written, failed: summary.failed } }),
      (e: unknown) => ({ rejected: e }),
    );
    await http.close();
    // today: resolves { written: 0, failed: 3 }, each record's error a ConfigError naming
    // `request.path` / `request.method` (a field the caller never wrote)
    expect(outcome).not.toHaveProperty('resolved');
    const error = (outcome as { rejected: ConfigError }).rejected;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.field).toBe(field);
    expect(taken).toBe(0);
  });

  it('createWriteStream({ path: "/a b" }) throws a ConfigError at once', () => {
    const http = createHttpBalancer({ origins: [server.origin] });
    let error: unknown;
    try {
      http.createWriteStream({ path: '/a b' }).destroy();
    } catch (e) {
      error = e;
    }
    void http.close();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('http.createWriteStream.path');
  });
});

describe('createHttpBalancer pool sizes', () => {
  it.each([
    ['pipelining', { pipelining: 2 ** 53 - 1 }],
    ['connectionsPerShard', { connectionsPerShard: 2 ** 52, pipelining: 4 }],
  ])('%s too large names the option given, not maxInFlightPerShard', (field, extra) => {
    let error: unknown;
    try {
      void createHttpBalancer({ origins: ['http://127.0.0.1:1'], ...extra }).close();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    // today: "`maxInFlightPerShard` must be at most 2⁵³ − 1 …, got 72057594037927930" — an
    // option the caller never wrote, holding a product they never computed
    expect((error as ConfigError).field).toBe(field);
  });
});
