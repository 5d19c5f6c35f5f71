import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { createS3Balancer, createS3Client, S3Error } from '../../src/s3/index.js';
import { clientOptions, deadPort, getBytes, startS3, type TestS3 } from './server.js';

describe('S3 errors against s3rver', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('a 4xx (NoSuchBucket) is not retried and names the bucket', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: [{ id: 'missing', client, bucket: 'no-such-bucket' }],
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 2 } },
    });
    const failures: boolean[] = [];
    balancer.on('failure', (e) => failures.push(e.willRetry));
    const error = await balancer.putObject({ key: 'a.txt', body: 'a' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(S3Error);
    const e = error as S3Error;
    expect(e.code).toBe('SHARDWISE_S3');
    expect(e.s3Code).toBe('NoSuchBucket');
    expect(e.statusCode).toBe(404);
    expect(e.retryable).toBe(false);
    expect(e.bucket).toBe('no-such-bucket');
    expect(e.shardId).toBe('missing');
    expect(e.operation).toBe('PutObject');
    expect(e.message).toContain('"no-such-bucket"');
    expect(failures).toEqual([false]);
    expect(balancer.stats().retries).toBe(0);
    await balancer.close();
  });

  it('a refused connection on one of two targets: every put lands on the other', async () => {
    const port = await deadPort();
    const dead = createS3Client({ ...clientOptions(`http://127.0.0.1:${port}`) });
    const live = s3.client();
    const balancer = createS3Balancer({
      targets: [
        { id: 'dead', client: dead, bucket: 'bucket-a' },
        { id: 'live', client: live, bucket: 'bucket-b' },
      ],
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 5 } },
    });
    const causes: unknown[] = [];
    balancer.on('retry', (e) => causes.push(e.error));
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        balancer.putObject({ key: `refused/${i}`, body: `r${i}` }),
      ),
    );
    expect(results.every((r) => r.shardId === 'live')).toBe(true);
    expect(causes.length).toBeGreaterThan(0);
    for (const cause of causes) {
      expect(cause).toBeInstanceOf(S3Error);
      expect(cause).toMatchObject({ s3Code: 'ECONNREFUSED', notSent: true, retryable: true });
    }
    // A one-shot stream is not idempotent: retried only because the error proves it was not
    // sent. A function returning a fresh stream is replayable.
    const viaFactory = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        balancer.putObject({
          key: `refused/f${i}`,
          body: () => Readable.from([Buffer.from(`f${i}`)]),
          contentLength: `f${i}`.length,
        }),
      ),
    );
    expect(viaFactory.every((r) => r.shardId === 'live')).toBe(true);
    expect((await getBytes(live, 'bucket-b', 'refused/f3'))?.toString()).toBe('f3');
    await balancer.close();
    dead.destroy();
  });

  it('a consumed one-shot stream is not sent twice', async () => {
    const port = await deadPort();
    const dead = createS3Client({ ...clientOptions(`http://127.0.0.1:${port}`) });
    const balancer = createS3Balancer({
      targets: [{ id: 'dead', client: dead, bucket: 'bucket-a' }],
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 5 } },
      health: false,
    });
    const error = await balancer
      .putObject({ key: 'once', body: Readable.from([Buffer.from('once')]), contentLength: 4 })
      .catch((e: unknown) => e);
    // The SDK starts reading the stream into the request before the connection is refused: the
    // body is gone, so the put fails at once instead of retrying with a half-read stream.
    expect(error).toBeInstanceOf(S3Error);
    expect(error).toMatchObject({ retryable: false, shardId: 'dead' });
    expect((error as Error).message).toMatch(/ECONNREFUSED.*one-shot stream body was read/);
    expect((error as Error).cause).toMatchObject({ s3Code: 'ECONNREFUSED', notSent: true });
    expect(balancer.stats().retries).toBe(0);
    await balancer.close();
    dead.destroy();
  });

  it('validates options with ConfigError', () => {
    const client = s3.client();
    const bad: [unknown, RegExp][] = [
      [{}, /`targets` must be a non-empty array/],
      [{ targets: [] }, /`targets` must be a non-empty array/],
      [{ targets: [{ bucket: 'bucket-a' }] }, /`targets\[0\]\.client` is required/],
      [{ targets: [{ client }] }, /`targets\[0\]\.bucket` is required/],
      [{ targets: [{ client, bucket: 'ab' }] }, /at least 3 characters, got "ab"/],
      [{ targets: [{ client, bucket: 'a/b' }] }, /bare bucket name/],
      [
        {
          targets: [
            { client, bucket: 'bucket-a' },
            { client, bucket: 'bucket-a' },
          ],
        },
        /`targets\[1\]\.id` must be unique/,
      ],
      [
        {
          targets: [
            { id: 'x', client, bucket: 'bucket-a' },
            { id: 'x', client, bucket: 'bucket-b' },
          ],
        },
        /`targets\[1\]\.id` must be unique/,
      ],
      [
        { targets: [{ client, bucket: 'bucket-a', region: 'x' }] },
        /`targets\[0\]\.region` is not a known option/,
      ],
      [
        { targets: [{ client, bucket: 'bucket-a' }], maxQueue: 3 },
        /`maxQueue` is not a known option/,
      ],
      [
        { targets: [{ client, bucket: 'bucket-a' }], partSizeBytes: 1024 },
        /`partSizeBytes` must be from 5 MiB/,
      ],
      [{ shards: [], targets: [{ client, bucket: 'bucket-a' }] }, /`shards` is not an option/],
    ];
    for (const [options, message] of bad) {
      let thrown: unknown;
      try {
        createS3Balancer(options as never);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, String(message)).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message).toMatch(message);
    }
  });

  it('rejects bad requests with ConfigError before any call', async () => {
    const balancer = createS3Balancer({ targets: [{ client: s3.client(), bucket: 'bucket-a' }] });
    await expect(balancer.putObject({ key: '', body: 'x' })).rejects.toThrow(/`request.key`/);
    await expect(balancer.putObject({ key: 'k', body: 42 as never })).rejects.toThrow(
      /`request.body` must be a string/,
    );
    await expect(
      balancer.putObject({ key: 'k', body: 'x', colour: 'red' } as never),
    ).rejects.toThrow(/`request.colour` is not a known option/);
    await expect(
      balancer.upload({ key: 'k', body: 'x', partSizeBytes: 100 }),
    ).rejects.toBeInstanceOf(ConfigError);
    // Counted like run() calls turned away: completed + failed + refused is every settled call.
    expect(balancer.stats()).toMatchObject({ completed: 0, failed: 0, refused: 4 });
    await balancer.close();
  });

  it('builds and destroys its own clients from target options, never yours', async () => {
    const mine = s3.client();
    const options = clientOptions(s3.endpoint);
    const balancer = createS3Balancer({
      targets: [
        { client: options, bucket: 'bucket-a', prefix: 'owned/' },
        { client: options, bucket: 'bucket-b', prefix: 'owned/' },
        { client: mine, bucket: 'bucket-c', prefix: 'owned/' },
      ],
    });
    const [a, b, c] = balancer.shards.map((s) => s.target.client);
    expect(a).toBe(b);
    expect(c).toBe(mine);
    expect(balancer.shards.map((s) => s.id)).toEqual([
      'bucket-a/owned/',
      'bucket-b/owned/',
      'bucket-c/owned/',
    ]);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => balancer.putObject({ key: `${i}`, body: 'o' })),
    );
    const destroyed = vi.spyOn(S3Client.prototype, 'destroy');
    try {
      await balancer.close();
      expect(destroyed.mock.contexts).toEqual([a]);
    } finally {
      destroyed.mockRestore();
    }
    // Yours still works after close.
    const first = results[0]!;
    expect((await getBytes(mine, first.bucket, first.key))?.toString()).toBe('o');
  });
});
