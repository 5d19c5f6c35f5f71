import { afterEach, describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { type FakeS3, fakeClientOptions, MiB, startFakeS3 } from './fixtures/fake-s3.js';

let fake: FakeS3 | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function slowDownOnA(f: FakeS3) {
  f.answer = (r) =>
    r.bucket === 'bkt-a'
      ? {
          status: 503,
          code: 'SlowDown',
          headers: { 'retry-after': '3600' },
          message: 'Please reduce your request rate.',
        }
      : 'ok';
}

describe('s3.ingest', () => {
  it('putObject honours the balancer maxRetryAfterMs for a SlowDown (control)', async () => {
    fake = await startFakeS3();
    slowDownOnA(fake);
    const client = createS3Client(fakeClientOptions(fake.endpoint));
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
      ],
      picker: roundRobin(),
      maxRetryAfterMs: 50,
      defaultRetryAfterMs: 10,
      health: false,
    });
    const advised: number[] = [];
    s3.on('failure', (e) => advised.push((e.error as { retryAfterMs: number }).retryAfterMs));
    await s3.putObject({ key: 'x', body: 'hello' });
    await s3.close();
    client.destroy();
    expect(advised).toEqual([50]);
  });

  it('s3.ingest honours the balancer maxRetryAfterMs for a SlowDown, as putObject does', async () => {
    fake = await startFakeS3();
    slowDownOnA(fake);
    const client = createS3Client(fakeClientOptions(fake.endpoint));
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
      ],
      picker: roundRobin(),
      maxRetryAfterMs: 50,
      defaultRetryAfterMs: 10,
      health: false,
    });
    const advised: number[] = [];
    s3.on('failure', (e) => advised.push((e.error as { retryAfterMs: number }).retryAfterMs));
    const summary = await s3.ingest([{ id: 1 }], {
      objectKey: ({ shardId, seq }) => `${shardId}-${seq}.jsonl`,
      batch: { maxRecords: 1 },
    });
    await s3.close();
    client.destroy();
    expect(summary.written).toBe(1);
    expect(advised).toEqual([50]);
  });

  it('close({ drain: false }) during a multipart batch of s3.ingest leaves no open multipart upload', async () => {
    fake = await startFakeS3();
    const f = fake;
    let parts = 0;
    let inPart!: () => void;
    const partStarted = new Promise<void>((r) => {
      inPart = r;
    });
    f.answer = (r) => {
      if (r.op === 'UploadPart' && ++parts >= 2) {
        inPart();
        return 'hang';
      }
      return 'ok';
    };
    const s3 = createS3Balancer({
      targets: [{ client: fakeClientOptions(f.endpoint), bucket: 'bkt-a' }],
    });
    const big = 'x'.repeat(1024);
    async function* rows() {
      for (let i = 0; i < 12 * 1024; i++) yield { i, big };
    }
    const run = s3
      .ingest(rows(), {
        objectKey: ({ shardId, seq }) => `${shardId}-${seq}.jsonl`,
        batch: { maxBytes: 64 * MiB, lingerMs: 10 },
        partSizeBytes: 5 * MiB,
        partConcurrency: 1,
      })
      .then(
        (s) => `resolved failed=${s.failed}`,
        (e: Error) => e.name,
      );
    await partStarted;
    await s3.close({ drain: false });
    await run;
    const snapshot = {
      aborts: f.seen.filter((r) => r.op === 'AbortMultipartUpload').length,
      open: f.open.size,
    };
    await new Promise((r) => setTimeout(r, 300));
    expect(snapshot).toEqual({ aborts: 1, open: 0 });
    expect(f.open.size).toBe(0);
  });
});
