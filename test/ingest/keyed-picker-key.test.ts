/**
 * A keyed picker (consistent hashing) routes every record by its key. An ingestion given one and
 * no `key` option used to read its source and fail every record with `MissingKeyError`; it is now
 * a `ConfigError` naming `key`, before a record is read or a call is made — on every entry point
 * (core, HTTP, S3; `ingest` and `createWriteStream`) — unless the picker has a `fallback`.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import {
  ConfigError,
  consistentHash,
  MissingKeyError,
  roundRobin,
  type ShardState,
} from '../../src/index.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { startServer, type TestServer } from '../http/servers.js';
import { clientOptions } from '../s3/server.js';
import { fleet, ManualClock, type Rec, records, run } from './helpers.js';

/** `n` records, counting how many the ingestion pulled. */
function counted(n: number): { source: Iterable<Rec>; pulled: () => number } {
  let pulled = 0;
  return {
    source: (function* () {
      for (const record of records(n)) {
        pulled++;
        yield record;
      }
    })(),
    pulled: () => pulled,
  };
}

/** What `call` threw, or rejected with. */
async function errorOf(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

function expectKeyError(error: unknown, field: string): void {
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).field).toBe(field);
  expect((error as Error).message).toContain('consistent-hash:ring');
  expect((error as Error).message).toContain('fallback');
}

describe('the core: ingest and createWriteStream with a keyed picker and no key', () => {
  it('ingest rejects with a ConfigError naming ingest.key, before reading a record', async () => {
    const balancer = fleet(new ManualClock(), { picker: consistentHash() });
    const { source, pulled } = counted(10);
    let sent = 0;
    const error = await errorOf(() =>
      balancer.ingest(source, {
        send: async () => {
          sent++;
        },
      }),
    );
    expectKeyError(error, 'ingest.key');
    expect(pulled()).toBe(0);
    expect(sent).toBe(0);
    expect(balancer.stats().refused + balancer.stats().completed).toBe(0);
    await balancer.close();
  });

  it('ingest with batch too', async () => {
    const balancer = fleet(new ManualClock(), { picker: consistentHash() });
    const { source, pulled } = counted(10);
    const error = await errorOf(() =>
      balancer.ingest(source, { batch: { maxRecords: 5 }, send: async () => undefined }),
    );
    expectKeyError(error, 'ingest.key');
    expect(pulled()).toBe(0);
    await balancer.close();
  });

  it('createWriteStream throws a ConfigError naming createWriteStream.key', async () => {
    const balancer = fleet(new ManualClock(), { picker: consistentHash() });
    const error = await errorOf(() => balancer.createWriteStream({ send: async () => {} }));
    expectKeyError(error, 'createWriteStream.key');
    await balancer.close();
  });

  it('a picker with a fallback takes keyless records: every one is written', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { picker: consistentHash({ fallback: roundRobin() }) });
    const seen: string[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(6), {
        send: async (shard: ShardState<string>) => {
          seen.push(shard.id);
        },
      }),
    );
    expect(summary.written).toBe(6);
    expect(seen.sort()).toEqual(['a', 'a', 'a', 'b', 'b', 'b']);
    await balancer.close();
  });

  it('a record whose key() gives none fails with a MissingKeyError whose hint names ingest’s key option', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { picker: consistentHash() });
    const summary = await run(
      clock,
      balancer.ingest(records(4), {
        key: (record) => (record.id === 2 ? undefined : `k${record.id}`),
        send: async () => {},
      }),
    );
    expect(summary.written).toBe(3);
    expect(summary.failures.map((f) => f.record.id)).toEqual([2]);
    const error = summary.failures[0]!.error;
    expect(error).toBeInstanceOf(MissingKeyError);
    expect((error as Error).message).toContain('run(fn, { key })');
    expect((error as Error).message).toContain('ingest() and createWriteStream(), a `key` option');
    await balancer.close();
  });
});

describe('the transports: http and s3, their own form and the core form', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer((_req, res) => res.end('ok'));
  });
  afterAll(async () => {
    await server.close();
  });

  it('http.ingest and http.createWriteStream refuse before a record is read or a request sent', async () => {
    const http = createHttpBalancer({ origins: [server.origin], picker: consistentHash() });
    const { source, pulled } = counted(10);
    expectKeyError(
      await errorOf(() => http.ingest(source, { path: '/ingest' })),
      'http.ingest.key',
    );
    expectKeyError(
      await errorOf(() => http.createWriteStream({ path: '/ingest' })),
      'http.createWriteStream.key',
    );
    expectKeyError(
      await errorOf(() => http.ingest(source, { send: async () => {} })),
      'ingest.key',
    );
    expect(pulled()).toBe(0);
    expect(server.requests).toBe(0);
    // Given a key, the same balancer writes.
    const summary = await http.ingest(records(10), {
      path: '/ingest',
      key: (r) => String(r.id),
      batch: { lingerMs: 0 },
    });
    expect(summary.written).toBe(10);
    await http.close();
  });

  it('s3.ingest and s3.createWriteStream refuse before a record is read or a call made', async () => {
    const client = new S3Client(clientOptions('http://127.0.0.1:1'));
    let calls = 0;
    client.middlewareStack.add(
      (next) => (args) => {
        calls++;
        return next(args);
      },
      { step: 'initialize', name: 'countCalls' },
    );
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bucket-a' },
        { client, bucket: 'bucket-b' },
      ],
      picker: consistentHash(),
    });
    const { source, pulled } = counted(10);
    expectKeyError(
      await errorOf(() => s3.ingest(source, { objectKey: ({ seq }) => `${seq}.jsonl` })),
      's3.ingest.key',
    );
    expectKeyError(
      await errorOf(() => s3.createWriteStream({ objectKey: ({ seq }) => `${seq}.jsonl` })),
      's3.createWriteStream.key',
    );
    expect(pulled()).toBe(0);
    expect(calls).toBe(0);
    await s3.close();
    client.destroy();
  });
});
