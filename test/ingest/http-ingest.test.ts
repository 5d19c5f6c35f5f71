/**
 * `http.ingest` and `http.createWriteStream` against real `node:http` servers on 127.0.0.1: the
 * servers parse each NDJSON (or JSON) body back and keep every record they got, so "every record
 * exactly once" is checked on what arrived, not on what was sent. Counts, never timings.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer, HttpError, p2c } from '../../src/http/index.js';
import { startServers, type TestServer } from '../http/servers.js';

interface Row {
  id: number;
  tenant: string;
  payload: string;
}

function rows(n: number): Row[] {
  return Array.from({ length: n }, (_, id) => ({
    id,
    tenant: `t${id % 37}`,
    payload: `row-${id}-${'é'.repeat(id % 5)}`,
  }));
}

/** What each server received: records by server, request content types and body sizes. */
interface Received {
  records: Row[][];
  contentTypes: Set<string>;
  bodyBytes: number[];
}

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

/**
 * `n` servers that parse NDJSON or JSON bodies. `answer` may answer instead (a status, or a body
 * listing refused positions) given the server's index and the parsed records.
 */
async function ingestServers(
  n: number,
  answer?: (index: number, records: Row[]) => { status: number; body?: string } | undefined,
): Promise<Received> {
  const received: Received = { records: [], contentTypes: new Set(), bodyBytes: [] };
  servers = await startServers(n, (req, res, body, server) => {
    const index = servers.indexOf(server);
    const type = String(req.headers['content-type']);
    received.contentTypes.add(type);
    received.bodyBytes.push(body.length);
    const text = body.toString('utf8');
    const records: Row[] =
      type === 'application/json'
        ? JSON.parse(text)
        : text
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line));
    const custom = answer?.(index, records);
    if (custom !== undefined && custom.status >= 300) {
      res.writeHead(custom.status).end(custom.body ?? '');
      return;
    }
    const refused = new Set<number>(
      custom?.body === undefined ? [] : JSON.parse(custom.body).refused,
    );
    received.records[index] ??= [];
    records.forEach((r, i) => {
      if (!refused.has(i)) received.records[index]!.push(r);
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(custom?.body ?? '{}');
  });
  for (let i = 0; i < n; i++) received.records[i] ??= [];
  return received;
}

function expectEachOnce(received: Received, total: number): void {
  const all = received.records.flat().map((r) => r.id);
  expect(all).toHaveLength(total);
  expect(new Set(all).size).toBe(total);
}

describe('http.ingest over real servers', () => {
  it('sends NDJSON batches: every record arrives exactly once, no body past maxBytes', async () => {
    const received = await ingestServers(4);
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin), picker: p2c() });
    const data = rows(20_000);
    const summary = await http.ingest(data, {
      path: '/ingest',
      batch: { maxRecords: 250, maxBytes: 16_384 },
    });
    await http.close();
    expect(summary).toMatchObject({ written: 20_000, failed: 0 });
    expectEachOnce(received, 20_000);
    expect([...received.contentTypes]).toEqual(['application/x-ndjson']);
    expect(Math.max(...received.bodyBytes)).toBeLessThanOrEqual(16_384);
    expect(received.bodyBytes.length).toBe(summary.batches);
    expect(summary.batches).toBeGreaterThanOrEqual(80);
    // What the servers got is what was sent, field for field (UTF-8 included).
    const byId = new Map(received.records.flat().map((r) => [r.id, r]));
    for (const row of data.slice(0, 50)) expect(byId.get(row.id)).toEqual(row);
    const total = received.bodyBytes.reduce((a, b) => a + b, 0);
    expect(summary.bytes).toBe(total); // NDJSON: the bodies are the records and their newlines
  });

  it("encode: 'json' sends JSON arrays", async () => {
    const received = await ingestServers(2);
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const summary = await http.ingest(rows(1_000), {
      path: '/bulk',
      encode: 'json',
      batch: { maxRecords: 100 },
    });
    await http.close();
    expect(summary.written).toBe(1_000);
    expectEachOnce(received, 1_000);
    expect([...received.contentTypes]).toEqual(['application/json']);
    expect(summary.batches).toBe(10);
  });

  it('keyed under consistent hashing: each server receives only the keys it is home to', async () => {
    const received = await ingestServers(3);
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker: consistentHash(),
    });
    const summary = await http.ingest(rows(3_000), {
      path: '/ingest',
      key: (row) => row.tenant,
      batch: { maxRecords: 64 },
    });
    expect(summary.written).toBe(3_000);
    expectEachOnce(received, 3_000);
    received.records.forEach((records, i) => {
      const origin = servers[i]!.origin;
      for (const r of records) expect(http.homeOf(r.tenant)).toBe(origin);
    });
    await http.close();
  });

  it('reads per-record failures from the response and retries only those records', async () => {
    const refusedOnce = new Set<number>();
    const received = await ingestServers(2, (_index, records) => {
      const refused: number[] = [];
      records.forEach((r, i) => {
        if (r.id % 97 === 0 && !refusedOnce.has(r.id)) {
          refusedOnce.add(r.id);
          refused.push(i);
        }
      });
      return { status: 200, body: JSON.stringify({ refused }) };
    });
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const summary = await http.ingest(rows(5_000), {
      path: '/bulk',
      batch: { maxRecords: 200 },
      failures: (response) =>
        response.json<{ refused: number[] }>().refused.map((index) => ({ index })),
    });
    await http.close();
    expect(refusedOnce.size).toBe(52);
    expect(summary).toMatchObject({ written: 5_000, failed: 0, retries: 52 });
    expectEachOnce(received, 5_000);
  });

  it('a server answering 503 for a while: its batches go elsewhere, every record arrives once', async () => {
    let failing = 40; // the first 40 requests to server 0 fail
    const received = await ingestServers(3, (index) => {
      if (index === 0 && failing-- > 0) return { status: 503 };
      return undefined;
    });
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker: p2c(),
      retry: { attempts: 5, budget: false },
    });
    const summary = await http.ingest(rows(10_000), {
      path: '/ingest',
      batch: { maxRecords: 100 },
    });
    await http.close();
    expect(summary).toMatchObject({ written: 10_000, failed: 0 });
    expectEachOnce(received, 10_000);
    expect(summary.retries).toBeGreaterThan(0);
  });

  it('a batch refused with a 400 is split down to the record at fault: it fails alone, every other is written', async () => {
    const received = await ingestServers(2, (_index, records) =>
      records.some((r) => r.id === 777) ? { status: 400, body: 'bad record 777' } : undefined,
    );
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const failed: number[] = [];
    const summary = await http.ingest(rows(2_000), {
      path: '/ingest',
      batch: { maxRecords: 100 },
      onFailed: (row) => failed.push(row.id),
    });
    await http.close();
    // The batch holding record 777 is split in halves, down to 777 alone: 7 splits of 100.
    expect(summary.failed).toBe(1);
    expect(summary.written).toBe(1_999);
    expect(failed).toEqual([777]);
    for (const { error } of summary.failures) {
      expect(error).toBeInstanceOf(HttpError);
      expect((error as HttpError).statusCode).toBe(400);
    }
    // 20 batches, and 2 requests a split (7 levels: ⌈log2 100⌉): never a retry of a 400.
    expect(summary.batches).toBeLessThanOrEqual(20 + 2 * 7);
    expectEachOnce(received, 1_999);
    const arrived = new Set(received.records.flat().map((r) => r.id));
    for (const id of failed) expect(arrived.has(id)).toBe(false);
  });

  it('keepRecords: false keeps bytes only, and reports failed records decoded from them', async () => {
    const refusedOnce = new Set<number>();
    const received = await ingestServers(2, (_index, records) => {
      if (records.some((r) => r.id === 150)) return { status: 400, body: 'no' };
      const refused: number[] = [];
      records.forEach((r, i) => {
        if (r.id % 50 === 7 && !refusedOnce.has(r.id)) {
          refusedOnce.add(r.id);
          refused.push(i);
        }
      });
      return { status: 200, body: JSON.stringify({ refused }) };
    });
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const data = rows(500);
    const seenInFailures: unknown[][] = [];
    const summary = await http.ingest(data, {
      path: '/ingest',
      batch: { maxRecords: 100, keepRecords: false },
      failures: (response, records) => {
        seenInFailures.push(records);
        return response.json<{ refused: number[] }>().refused.map((index) => ({ index }));
      },
    });
    await http.close();
    // Refused records were retried from their bytes, and written; the 400 batch was split down
    // to record 150, which failed alone.
    expect(refusedOnce.size).toBeGreaterThan(0);
    expect(summary.written).toBe(499);
    expect(summary.failed).toBe(1);
    expectEachOnce(received, 499);
    // Reported as decoded from the bytes sent: equal to the record, not the same object.
    const failed = summary.failures.map((f) => f.record);
    expect(failed).toEqual([data[150]]);
    expect(failed[0]).not.toBe(data[150]);
    // failures() was handed the batch's records, decoded.
    expect(seenInFailures[0]![0]).toEqual(data[(seenInFailures[0]![0] as Row).id]);
  });

  it('keepRecords: false is refused where the records themselves are needed', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    await expect(
      http.ingest([1], { path: '/x', encode: (r) => String(r), batch: { keepRecords: false } }),
    ).rejects.toThrow(
      /`http\.ingest\.batch\.keepRecords` can be false only where shardwise encodes/,
    );
    await expect(
      http.ingest([1], { send: async () => undefined, batch: { keepRecords: false } }),
    ).rejects.toThrow(/`ingest\.batch\.keepRecords`/);
    await http.close();
  });

  it('pre-encoded lines pass through untouched', async () => {
    const received = await ingestServers(2);
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const lines = rows(500).map((r) => JSON.stringify(r));
    const summary = await http.ingest(lines, { path: '/ingest', batch: { maxRecords: 50 } });
    await http.close();
    expect(summary.written).toBe(500);
    expectEachOnce(received, 500);
    expect(summary.bytes).toBe(lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0));
  });

  it('createWriteStream: pipeline() of 10,000 records, every one arrives once', async () => {
    const received = await ingestServers(3);
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    const stream = http.createWriteStream<Row>({ path: '/ingest', batch: { maxRecords: 128 } });
    await pipeline(Readable.from(rows(10_000)), stream);
    const summary = await stream.settled;
    await http.close();
    expect(summary).toMatchObject({ written: 10_000, failed: 0 });
    expectEachOnce(received, 10_000);
  });
});
