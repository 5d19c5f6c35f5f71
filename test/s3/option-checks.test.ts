import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { createS3Balancer, createS3Client, type S3Balancer } from '../../src/s3/index.js';
import { type FakeS3, fakeClientOptions, startFakeS3 } from '../hostile/fixtures/fake-s3.js';

/**
 * S3 request fields that end up as HTTP headers: a value no header can carry is the caller's
 * mistake — refused before anything is sent (a `ConfigError`, counted in `stats().refused`),
 * never retried on every target and charged to their health; and a header value is never quoted.
 */
describe('S3 request fields sent as headers', () => {
  let f: FakeS3;
  let client: ReturnType<typeof createS3Client>;
  let s3: S3Balancer;
  beforeAll(async () => {
    f = await startFakeS3();
    client = createS3Client(fakeClientOptions(f.endpoint));
  });
  afterAll(async () => {
    client.destroy();
    await f.close();
  });
  const fresh = () =>
    createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
        { client, bucket: 'bkt-c' },
      ],
    });

  it.each([
    ['CR LF (header injection)', 'text/plain\r\nx-amz-acl: public-read'],
    ['NUL', 'text/plain\u0000'],
  ])(
    'putObject({ contentType: %s }) is a ConfigError naming request.contentType, refused and charged to no target',
    async (_name, contentType) => {
      s3 = fresh();
      let retries = 0;
      s3.on('retry', () => retries++);
      const seenBefore = f.seen.length;
      const error = await s3.putObject({ key: 'k', body: 'v', contentType }).then(
        () => undefined,
        (e: unknown) => e,
      );
      const stats = s3.stats();
      await s3.close();
      // today: RetriesExhaustedError after 3 attempts ("Invalid character in header content
      // [\"content-type\"]"), 2 retries, one failure charged to each target, refused 0
      expect({
        config: error instanceof ConfigError,
        field: (error as ConfigError)?.field,
        retries,
        failures: stats.shards.map((s) => s.failures),
        refused: stats.refused,
        failed: stats.failed,
      }).toEqual({
        config: true,
        field: 'request.contentType',
        retries: 0,
        failures: [0, 0, 0],
        refused: 1,
        failed: 0,
      });
      expect(f.seen.length).toBe(seenBefore);
    },
  );

  it('s3.ingest({ contentType: "a\\r\\nb" }) rejects with a ConfigError before taking a record', async () => {
    s3 = fresh();
    let taken = 0;
    function* rows() {
      for (let i = 0; i < 3; i++) {
        taken++;
        yield { i };
      }
    }
    const outcome = await s3
      .ingest(rows(), {
        objectKey: ({ shardId, seq }) => `${shardId}-${seq}`,
        contentType: 'application/x-ndjson\r\nx-amz-acl: public-read',
      })
      .then(
        (summary) => ({ resolved: summary.failed }),
        (e: unknown) => ({ rejected: e }),
      );
    const failures = s3.stats().shards.reduce((n, s) => n + s.failures, 0);
    await s3.close();
    // today: resolves { failed: 3 } — each batch RetriesExhausted on every target
    expect((outcome as { rejected?: unknown }).rejected).toBeInstanceOf(ConfigError);
    expect((outcome as { rejected: ConfigError }).rejected.field).toBe('s3.ingest.contentType');
    expect(taken).toBe(0);
    expect(failures).toBe(0);
  });

  it('a metadata value (an x-amz-meta-* header value) is never quoted in the ConfigError', async () => {
    s3 = fresh();
    const secret = 'sk_live_51HxQ2eAbCdEfGhIj';
    const error = (await s3
      .putObject({ key: 'k', body: 'v', metadata: { 'api-token': `${secret}\n` } })
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as ConfigError;
    await s3.close();
    expect(error).toBeInstanceOf(ConfigError);
    // today: "`request.metadata.api-token` must be printable ASCII …, got \"sk_live_…\\n\" (string)"
    expect(error.message).not.toContain(secret);
    expect(JSON.stringify(error.value)).not.toContain(secret);
  });
});

describe('createS3Balancer targets given as client options', () => {
  it.each([
    ['maxSockets', -1, /positive integer/],
    ['socketTimeoutMs', 2 ** 31, /at most 2147483647/],
    ['connectionTimeoutMs', 1.5, /non-negative integer/],
  ])(
    'targets[0].client.%s: %s states the expectation, as createS3Client does',
    (name, value, expectation) => {
      let error: unknown;
      try {
        createS3Balancer({
          targets: [{ client: { region: 'us-east-1', [name]: value } as never, bucket: 'bkt-a' }],
        });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(`targets[0].client.${name}`);
      // today: "`targets[0].client.maxSockets` is invalid, got -1 (number)" — the expectation is dropped
      expect((error as ConfigError).message).toMatch(expectation);
    },
  );
});

describe('createS3Client option names', () => {
  it.each([
    ['maxSocket', 10],
    ['connectionTimeout', 1_000],
    ['socketTimeout', 1_000],
  ])(
    'a near-miss of its own option names (%s) is a ConfigError, not silently ignored',
    (name, value) => {
      let error: unknown;
      try {
        createS3Client({ region: 'us-east-1', [name]: value } as never).destroy();
      } catch (e) {
        error = e;
      }
      // today: passed to the S3Client config, where nothing reads it: the SDK handler built here
      // keeps the defaults (50 sockets, 5 000 ms connect, no socket timeout)
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(name);
    },
  );
});
