import { Readable } from 'node:stream';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consistentHash } from '../../src/pickers/hashing/index.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { BUCKETS, getBytes, startS3, type TestS3 } from './server.js';

describe('S3Balancer.putObject against s3rver', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('puts 1,000 objects across 3 buckets, each present with its bytes', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: BUCKETS.map((bucket) => ({ client, bucket, prefix: 'spread/' })),
      maxInFlightPerShard: 16,
    });
    const TOTAL = 1_000;
    const bodyOf = (i: number) => `object ${i} ${'x'.repeat(i % 97)}`;
    const results = await Promise.all(
      Array.from({ length: TOTAL }, (_, i) =>
        balancer.putObject({ key: `obj-${i}`, body: bodyOf(i), contentType: 'text/plain' }),
      ),
    );
    await balancer.close();
    const perBucket = new Map<string, number>();
    for (const r of results) perBucket.set(r.bucket, (perBucket.get(r.bucket) ?? 0) + 1);
    expect([...perBucket.keys()].sort()).toEqual([...BUCKETS]);
    for (const n of perBucket.values()) expect(n).toBeGreaterThan(0);
    // Every object is where the result says, with its bytes, and nowhere else.
    let listed = 0;
    for (const bucket of BUCKETS) {
      const out = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: 'spread/', MaxKeys: 1000 }),
      );
      listed += out.KeyCount ?? 0;
    }
    expect(listed).toBe(TOTAL);
    // Read back a few at a time: a thousand GETs at once make s3rver reset connections on a busy
    // machine, and these reads are the test's own, with no balancer to retry them.
    for (let from = 0; from < TOTAL; from += 16) {
      const checks = results.slice(from, from + 16).map(async (r, k) => {
        expect(r.key).toBe(`spread/obj-${from + k}`);
        const bytes = await getBytes(client, r.bucket, r.key);
        expect(bytes?.toString()).toBe(bodyOf(from + k));
      });
      await Promise.all(checks);
    }
  });

  it('routes the same key to the same bucket on a second run (consistent hashing)', async () => {
    const client = s3.client();
    const run = async () => {
      const balancer = createS3Balancer({
        targets: BUCKETS.map((bucket) => ({ client, bucket, prefix: 'hashed/' })),
        picker: consistentHash({ algorithm: 'ring' }),
        // A shard at its cap is not offered and its keys go to their next shard: keep the cap
        // out of reach so placement depends on the key alone.
        maxInFlightPerShard: 1_000,
      });
      const out = new Map<string, string>();
      await Promise.all(
        Array.from({ length: 120 }, async (_, i) => {
          const r = await balancer.putObject({ key: `k-${i}`, body: `v${i}` });
          out.set(`k-${i}`, r.bucket);
        }),
      );
      await balancer.close();
      return out;
    };
    const first = await run();
    const second = await run();
    expect(second).toEqual(first);
    expect(new Set(first.values()).size).toBe(3);
  });

  it('routes by routingKey when one is given', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: BUCKETS.map((bucket) => ({ client, bucket, prefix: 'tenant/' })),
      picker: consistentHash({ algorithm: 'ring' }),
      maxInFlightPerShard: 1_000,
    });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        balancer.putObject({ key: `t1/row-${i}`, body: 'r', routingKey: 'tenant-1' }),
      ),
    );
    await balancer.close();
    expect(new Set(results.map((r) => r.bucket)).size).toBe(1);
  });

  it('puts a Readable body (bytes equal), metadata and content type kept', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }] });
    const data = Buffer.alloc(300_000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31) % 251;
    const chunks = Array.from({ length: 30 }, (_, i) =>
      data.subarray(i * 10_000, (i + 1) * 10_000),
    );
    const res = await balancer.putObject({
      key: 'stream/one.bin',
      body: Readable.from(chunks),
      contentLength: data.length,
      contentType: 'application/octet-stream',
      metadata: { origin: 'test' },
    });
    expect(res).toMatchObject({ shardId: 'bucket-a', bucket: 'bucket-a', key: 'stream/one.bin' });
    expect(res.etag).toMatch(/^[0-9a-f]{32}$/);
    expect((await getBytes(client, 'bucket-a', 'stream/one.bin'))?.equals(data)).toBe(true);
    const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
    const head = await client.send(
      new HeadObjectCommand({ Bucket: 'bucket-a', Key: 'stream/one.bin' }),
    );
    expect(head.ContentType).toBe('application/octet-stream');
    expect(head.Metadata).toEqual({ origin: 'test' });
    await balancer.close();
  });

  it('puts an async-iterable body and a Uint8Array body', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: 'bucket-b' }] });
    async function* gen() {
      yield 'hello ';
      yield Buffer.from('world');
    }
    await balancer.putObject({ key: 'iter.txt', body: gen(), contentLength: 11 });
    await balancer.putObject({ key: 'u8.bin', body: new Uint8Array([1, 2, 3]) });
    await balancer.close();
    expect((await getBytes(client, 'bucket-b', 'iter.txt'))?.toString()).toBe('hello world');
    expect([...(await getBytes(client, 'bucket-b', 'u8.bin'))!]).toEqual([1, 2, 3]);
  });
});
