/**
 * `keepFailures`: a summary keeps the first failed records and no more, so an ingestion whose
 * shards refuse everything does not hold every record it was given; `failed` counts them all,
 * and `onFailed` and the stream's `'failed'` event hear of every one.
 */
import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { ConfigError, type RecordWriteStream } from '../../src/index.js';
import { DEFAULT_KEEP_FAILURES } from '../../src/ingest/options.js';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { fleet, ManualClock, type Rec, records, run } from './helpers.js';

/** A send that refuses every record for good. */
const refuse = async (): Promise<never> => {
  throw Object.assign(new Error('refused'), { retryable: false });
};

describe('keepFailures', () => {
  it('keeps the first N failures, in order; failed and onFailed count every one', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const heard: number[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(50), {
        send: refuse,
        keepFailures: 20,
        onFailed: (record) => heard.push(record.id),
      }),
    );
    expect(summary).toMatchObject({ written: 0, failed: 50 });
    expect(summary.failures).toHaveLength(20);
    expect(summary.errors).toBe(summary.failures);
    expect(summary.failures.map((f) => f.record.id)).toEqual(heard.slice(0, 20));
    expect(heard).toHaveLength(50);
    expect(new Set(heard).size).toBe(50);
  });

  it('0 keeps none, Infinity keeps all', async () => {
    const clock = new ManualClock();
    const none = await run(
      clock,
      fleet(clock).ingest(records(30), { send: refuse, keepFailures: 0 }),
    );
    expect(none).toMatchObject({ failed: 30, failures: [] });
    const all = await run(
      clock,
      fleet(clock).ingest(records(30), {
        send: refuse,
        keepFailures: Number.POSITIVE_INFINITY,
      }),
    );
    expect(all.failures).toHaveLength(30);
  });

  it(`keeps ${DEFAULT_KEEP_FAILURES} by default: a run of refusals past that holds no more`, async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 100, maxQueued: 1_000 });
    const total = DEFAULT_KEEP_FAILURES + 1_000;
    let heard = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(total), {
        send: refuse,
        batch: { maxRecords: 1_000, lingerMs: 1 },
        onFailed: () => {
          heard++;
        },
      }),
    );
    expect(summary.failed).toBe(total);
    expect(heard).toBe(total);
    expect(summary.failures).toHaveLength(DEFAULT_KEEP_FAILURES);
    expect(summary.failures[0]!.record.id).toBe(0);
  });

  it('a write stream keeps N too, and emits failed for every record', async () => {
    const clock = new ManualClock();
    const stream = fleet(clock).createWriteStream<Rec>({
      send: refuse,
      batch: { maxRecords: 10, lingerMs: 1 },
      keepFailures: 3,
    }) as RecordWriteStream<Rec>;
    let events = 0;
    stream.on('failed', () => events++);
    stream.on('error', () => {});
    for (const record of records(10)) stream.write(record);
    stream.end();
    const summary = await run(clock, stream.settled);
    expect(summary.failed).toBe(10);
    expect(events).toBe(10);
    expect(summary.failures).toHaveLength(3);
  });

  it.each<[unknown, string]>([
    [-1, 'a negative count'],
    [1.5, 'a fraction'],
    ['10', 'a string'],
    [Number.NaN, 'NaN'],
  ])('refuses %s (%s) with a ConfigError naming the field', async (value) => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    await expect(
      balancer.ingest(records(1), { send: refuse, keepFailures: value as number }),
    ).rejects.toMatchObject({ name: 'ConfigError', field: 'ingest.keepFailures' });
    expect(() =>
      balancer.createWriteStream({ send: refuse, keepFailures: value as number }),
    ).toThrow(ConfigError);
  });

  it('is an option of the HTTP and S3 ingestions too, checked the same way', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:1'] });
    const client = createS3Client({ endpoint: 'http://127.0.0.1:1', region: 'us-east-1' });
    const s3 = createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }] });
    try {
      await expect(http.ingest([], { path: '/x', keepFailures: 5 })).resolves.toMatchObject({
        written: 0,
      });
      await expect(
        s3.ingest([], { objectKey: ({ seq }) => `${seq}`, keepFailures: 5 }),
      ).resolves.toMatchObject({ written: 0 });
      await expect(http.ingest([], { path: '/x', keepFailures: -1 })).rejects.toMatchObject({
        field: 'http.ingest.keepFailures',
      });
      await expect(
        s3.ingest([], { objectKey: ({ seq }) => `${seq}`, keepFailures: -1 }),
      ).rejects.toMatchObject({ field: 's3.ingest.keepFailures' });
    } finally {
      await http.close();
      await s3.close();
      client.destroy();
    }
  });
});
