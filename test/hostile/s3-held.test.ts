import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { type FakeS3, fakeClientOptions, startFakeS3 } from './fixtures/fake-s3.js';

let fake: FakeS3 | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('aborts and one-shot bodies', () => {
  it('a one-shot stream put answered SlowDown after its body was read is not re-sent elsewhere', async () => {
    fake = await startFakeS3();
    fake.answer = (r) => (r.bucket === 'bkt-a' ? { status: 503, code: 'SlowDown' } : 'ok');
    const client = createS3Client(fakeClientOptions(fake.endpoint));
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
      ],
      picker: roundRobin(),
    });
    const err = await s3
      .putObject({ key: 'k', body: Readable.from([Buffer.from('abc')]), contentLength: 3 })
      .catch((e: Error & { retryable?: boolean }) => e);
    await s3.close();
    client.destroy();
    expect((err as Error).name).toBe('S3Error');
    expect(fake.seen.filter((r) => r.op === 'PutObject').map((r) => r.bucket)).toEqual(['bkt-a']);
  });
});
