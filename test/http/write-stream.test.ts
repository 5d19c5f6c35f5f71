import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, WriteFailedError } from '../../src/http/index.js';
import { startServers, type TestServer } from './servers.js';

interface Row {
  id: number;
}
const rows = (n: number): Row[] => Array.from({ length: n }, (_, id) => ({ id }));

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function collecting(n: number, status = (_rows: Row[]) => 200) {
  const got: number[] = [];
  servers = await startServers(n, (_req, res, body) => {
    const recs = body
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Row);
    const code = status(recs);
    if (code === 200) got.push(...recs.map((r) => r.id));
    res.writeHead(code).end('{}');
  });
  return got;
}

describe('http.createWriteStream', () => {
  it('destroy() while a batch lingers: its records are written or failed, settled resolves', async () => {
    const got = await collecting(2);
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const stream = http.createWriteStream<Row>({
      path: '/i',
      batch: { maxRecords: 1000, lingerMs: 600_000 },
    });
    let closes = 0;
    stream.on('close', () => closes++);
    for (const r of rows(10)) stream.write(r);
    await new Promise((r) => setImmediate(r));
    stream.destroy();
    const s = await stream.settled;
    await http.close();
    expect(s.written + s.failed).toBe(10);
    expect(got.length).toBe(s.written);
    expect(closes).toBe(1);
  });

  it('a 400 batch: stream errors with WriteFailedError; every record accounted', async () => {
    const got = await collecting(2, (recs) => (recs.some((r) => r.id === 7) ? 400 : 200));
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const stream = http.createWriteStream<Row>({ path: '/i', batch: { maxRecords: 5 } });
    let failedEvents = 0;
    stream.on('failed', () => failedEvents++);
    const err = await pipeline(Readable.from(rows(200)), stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    const s = await stream.settled;
    await http.close();
    expect(err).toBeInstanceOf(WriteFailedError);
    expect(failedEvents).toBe(s.failed);
    expect(got.length).toBe(s.written);
    expect(new Set(got).size).toBe(got.length);
  });

  it('pipeline aborted midway: every record the stream took is written or failed', async () => {
    const got = await collecting(2);
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const stream = http.createWriteStream<Row>({
      path: '/i',
      batch: { maxRecords: 10, lingerMs: 5 },
    });
    const ac = new AbortController();
    let n = 0;
    async function* src() {
      for (let id = 0; id < 100_000; id++) {
        if (++n === 500) ac.abort();
        yield { id };
      }
    }
    const err = await pipeline(Readable.from(src()), stream, { signal: ac.signal }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const s = await stream.settled;
    await http.close();
    expect((err as Error).name).toBe('AbortError');
    expect(got.length).toBe(s.written);
    expect(s.written + s.failed).toBeGreaterThan(0);
  });
});
