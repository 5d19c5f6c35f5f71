import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Balancer } from '../../src/s3/index.js';
import { BUCKETS, getBytes, startS3, type TestS3 } from './server.js';

const MiB = 1024 * 1024;

/** Deterministic, non-repeating-per-part bytes (a part mix-up changes the object). */
function payload(size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = 0x9e3779b9;
  for (let i = 0; i + 4 <= size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i);
  }
  return out;
}

const sha = (b: Uint8Array | undefined) =>
  b === undefined ? 'missing' : createHash('sha256').update(b).digest('hex');

describe('S3Balancer.upload (multipart) against s3rver', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('uploads 12 MiB in 3 parts of 5 MiB, bytes equal afterwards, bytes declared', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: BUCKETS.map((bucket) => ({ client, bucket })),
    });
    const body = payload(12 * MiB);
    const pending = balancer.upload({
      key: 'big/twelve.bin',
      body,
      partSizeBytes: 5 * MiB,
      contentType: 'application/octet-stream',
    });
    // Byte-aware load: while the upload runs, its target carries the body's size in flight.
    const inFlightBytes = balancer.shards.reduce((sum, s) => sum + s.bytesInFlight, 0);
    expect(inFlightBytes).toBe(12 * MiB);
    const res = await pending;
    expect(balancer.shards.reduce((sum, s) => sum + s.bytesInFlight, 0)).toBe(0);
    expect(res).toMatchObject({ key: 'big/twelve.bin', parts: 3, multipart: true });
    expect(BUCKETS).toContain(res.bucket);
    expect(res.etag).not.toBe('');
    expect(sha(await getBytes(client, res.bucket, res.key))).toBe(sha(body));
    await balancer.close();
  });

  it('uploads a Readable body in parts cut from the stream', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: 'bucket-b' }] });
    const body = payload(11 * MiB + 12345);
    // Odd-sized chunks, so parts are assembled across chunk boundaries.
    const chunks: Buffer[] = [];
    for (let at = 0; at < body.length; at += 777_777) chunks.push(body.subarray(at, at + 777_777));
    const res = await balancer.upload({
      key: 'big/stream.bin',
      body: Readable.from(chunks),
      partSizeBytes: 5 * MiB,
      partConcurrency: 2,
    });
    expect(res).toMatchObject({ bucket: 'bucket-b', parts: 3, multipart: true });
    expect(sha(await getBytes(client, 'bucket-b', 'big/stream.bin'))).toBe(sha(body));
    await balancer.close();
  });

  it('sends a body that fits in one part as a single PutObject', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: 'bucket-c' }] });
    const res = await balancer.upload({ key: 'small.txt', body: 'small' });
    expect(res).toMatchObject({ parts: 1, multipart: false, bucket: 'bucket-c' });
    expect((await getBytes(client, 'bucket-c', 'small.txt'))?.toString()).toBe('small');
    await balancer.close();
  });

  it('a stream that fails mid-upload fails the upload (aborted, no object left)', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }] });
    async function* broken() {
      yield payload(6 * MiB);
      yield payload(5 * MiB);
      throw new Error('disk read failed');
    }
    await expect(
      balancer.upload({ key: 'big/broken.bin', body: broken(), partSizeBytes: 5 * MiB }),
    ).rejects.toThrow('disk read failed');
    await balancer.close();
    expect(await getBytes(client, 'bucket-a', 'big/broken.bin')).toBeUndefined();
  });
});
