/**
 * `s3.ingest` against a real S3-protocol server (s3rver on 127.0.0.1): one object per batch,
 * none larger than `maxBytes`, every record in exactly one object (read back and parsed), keys
 * from `objectKey` with `seq` counted per target, a large batch as a multipart upload, and a
 * retried batch written under the same key.
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { createS3Balancer, S3Error } from '../../src/s3/index.js';
import { RecentNames } from '../../src/s3/ingest.js';
import { seededRandom } from '../../src/testing/index.js';
import { BUCKETS, getBytes, startS3, type TestS3 } from '../s3/server.js';

interface Row {
  id: number;
  text: string;
}

const rows = (n: number, pad = 0): Row[] =>
  Array.from({ length: n }, (_, id) => ({ id, text: `row ${id} ${'x'.repeat(pad)}` }));

/** Every object under `prefix` in every test bucket, with its bytes. */
async function objects(client: S3Client, prefix: string) {
  const found: { bucket: string; key: string; bytes: Buffer }[] = [];
  for (const bucket of BUCKETS) {
    let token: string | undefined;
    do {
      const out = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const item of out.Contents ?? []) {
        const bytes = await getBytes(client, bucket, item.Key!);
        found.push({ bucket, key: item.Key!, bytes: bytes! });
      }
      token = out.NextContinuationToken;
    } while (token !== undefined);
  }
  return found;
}

/** `client`, made to answer 500 InternalError to every call. */
function failing(client: S3Client): S3Client {
  client.middlewareStack.add(
    () => async () => {
      throw Object.assign(new Error('We encountered an internal error.'), {
        name: 'InternalError',
        $fault: 'server',
        $metadata: { httpStatusCode: 500 },
      });
    },
    { step: 'initialize', name: 'alwaysFails' },
  );
  return client;
}

/**
 * Two targets under `prefix`: "flaky" (bucket-a, on a client that fails every call) and "steady"
 * (bucket-b), with quick retries, so flaky's batches move to steady.
 */
function flakyAndSteady(flaky: S3Client, good: S3Client, prefix: string) {
  return createS3Balancer({
    targets: [
      { id: 'flaky', client: flaky, bucket: BUCKETS[0], prefix },
      { id: 'steady', client: good, bucket: BUCKETS[1], prefix },
    ],
    retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 5 }, budget: false },
    health: false,
    random: seededRandom(5),
  });
}

function parseNdjson(bytes: Buffer): Row[] {
  const text = bytes.toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Row);
}

describe('s3.ingest against s3rver', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('writes objects of at most maxBytes, every record in exactly one object', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: BUCKETS.map((bucket) => ({ client, bucket, prefix: 'spread/' })),
    });
    const names: { shardId: string; seq: number; count: number }[] = [];
    const summary = await balancer.ingest(rows(5_000, 30), {
      objectKey: (info) => {
        names.push(info);
        return `run-1/${info.shardId}-${String(info.seq).padStart(4, '0')}.jsonl`;
      },
      batch: { maxBytes: 20_000, maxRecords: 10_000, lingerMs: 100 },
    });
    await balancer.close();
    expect(summary).toMatchObject({ written: 5_000, failed: 0 });
    const found = await objects(client, 'spread/run-1/');
    expect(found).toHaveLength(summary.batches);
    const ids: number[] = [];
    for (const object of found) {
      expect(object.bytes.byteLength).toBeLessThanOrEqual(20_000);
      for (const row of parseNdjson(object.bytes)) ids.push(row.id);
    }
    expect(ids).toHaveLength(5_000);
    expect(new Set(ids).size).toBe(5_000);
    // seq counts each target's batches from 0, once per batch.
    for (const bucket of BUCKETS) {
      const seqs = names.filter((n) => n.shardId === bucket).map((n) => n.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i));
    }
    expect(names.reduce((n, info) => n + info.count, 0)).toBe(5_000);
    expect(summary.bytes).toBe(found.reduce((n, o) => n + o.bytes.byteLength, 0));
  });

  it('puts a batch larger than partSizeBytes as a multipart upload, whole', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: BUCKETS[0] }] });
    const MiB = 1024 * 1024;
    // ~6.5 MiB of records in one batch: two parts of 5 MiB at most.
    const data = rows(6_500, 1_000);
    const summary = await balancer.ingest(data, {
      objectKey: ({ seq }) => `multipart/big-${seq}.jsonl`,
      batch: { maxBytes: 8 * MiB, maxRecords: 100_000 },
      partSizeBytes: 5 * MiB,
    });
    await balancer.close();
    expect(summary).toMatchObject({ written: 6_500, batches: 1 });
    const found = await objects(client, 'multipart/');
    expect(found).toHaveLength(1);
    expect(found[0]!.bytes.byteLength).toBeGreaterThan(5 * MiB);
    expect(parseNdjson(found[0]!.bytes).map((r) => r.id)).toEqual(data.map((r) => r.id));
  });

  it('a batch retried on another target is put under the key it was given: one object', async () => {
    const good = s3.client();
    // Target "flaky" answers 500 InternalError to every put: its batches are retried on "steady".
    const balancer = flakyAndSteady(failing(s3.client()), good, 'same/');
    const names: string[] = [];
    const summary = await balancer.ingest(rows(1_000), {
      objectKey: ({ shardId, seq }) => {
        const name = `${shardId}-${seq}.jsonl`;
        names.push(name);
        return name;
      },
      batch: { maxRecords: 50 },
    });
    await balancer.close();
    expect(summary).toMatchObject({
      written: 1_000,
      failed: 0,
      batches: 20 + summary.retries / 50,
    });
    expect(summary.retries).toBeGreaterThan(0);
    // One name per batch, however many attempts it took; one object per name.
    expect(names).toHaveLength(20);
    const found = await objects(good, 'same/');
    expect(found.map((o) => o.key).sort()).toEqual(names.map((n) => `same/${n}`).sort());
    expect(found.every((o) => o.bucket === BUCKETS[1])).toBe(true);
    expect(names.some((n) => n.startsWith('flaky-'))).toBe(true); // retried, key kept
    const ids = found.flatMap((o) => parseNdjson(o.bytes).map((r) => r.id));
    expect(new Set(ids).size).toBe(1_000);
    expect(ids).toHaveLength(1_000);
  });

  it('a name objectKey gave an earlier batch fails the later batch instead of overwriting it', async () => {
    const good = s3.client();
    // "flaky" fails every put, so its batches are retried on "steady" under the names they were
    // given. Without the shard id in the name, steady's batch 0 and a moved batch 0 are both
    // `part-0`, in the same bucket: the second put would overwrite the first's records.
    const balancer = flakyAndSteady(failing(s3.client()), good, 'clash/');
    const summary = await balancer.ingest(rows(1_000), {
      objectKey: ({ seq }) => `part-${seq}.jsonl`,
      batch: { maxRecords: 50 },
    });
    await balancer.close();
    expect(summary.written + summary.failed).toBe(1_000);
    expect(summary.failed).toBeGreaterThan(0);
    for (const { error } of summary.failures) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('s3.ingest.objectKey');
      expect((error as Error).message).toMatch(/a name no earlier batch of the ingestion has/);
    }
    // What the summary counts as written is in the bucket, every record once.
    const found = await objects(good, 'clash/');
    const ids = found.flatMap((o) => parseNdjson(o.bytes).map((r) => r.id));
    expect(ids).toHaveLength(summary.written);
    expect(new Set(ids).size).toBe(summary.written);
    const failedIds = summary.failures.map((f) => f.record.id);
    expect(new Set([...ids, ...failedIds]).size).toBe(1_000);
  });

  it('a constant objectKey on one target writes one batch and fails the others, named', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: [{ client, bucket: BUCKETS[2], prefix: 'one/' }],
    });
    const summary = await balancer.ingest(rows(30), {
      objectKey: () => 'same.jsonl',
      batch: { maxRecords: 10 },
    });
    await balancer.close();
    expect(summary).toMatchObject({ written: 10, failed: 20, retries: 0 });
    expect(summary.failures[0]!.error).toMatchObject({
      field: 's3.ingest.objectKey',
      value: 'same.jsonl',
    });
    const found = await objects(client, 'one/');
    expect(found).toHaveLength(1);
    expect(parseNdjson(found[0]!.bytes)).toHaveLength(10);
  });

  it('a batch refused by its target (4xx) fails its records with the S3Error; the rest are objects', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: [
        { id: 'missing', client, bucket: 'no-such-bucket-here' },
        { client, bucket: BUCKETS[2] },
      ],
      health: false,
      random: seededRandom(5),
    });
    const keys: string[] = [];
    const summary = await balancer.ingest(rows(400), {
      objectKey: ({ shardId, seq }) => {
        const key = `moved/${shardId}-${seq}.jsonl`;
        keys.push(key);
        return key;
      },
      batch: { maxRecords: 100 },
    });
    await balancer.close();
    // NoSuchBucket is a 4xx, not retried: batches that started on the missing bucket fail.
    expect(summary.written + summary.failed).toBe(400);
    expect(summary.failed).toBeGreaterThan(0);
    expect(summary.written).toBeGreaterThan(0);
    for (const { error } of summary.failures) expect(error).toBeInstanceOf(S3Error);
    const found = await objects(client, 'moved/');
    expect(found.map((o) => o.key).sort()).toEqual(
      keys.filter((k) => k.startsWith(`moved/${BUCKETS[2]}`)).sort(),
    );
    const ids = found.flatMap((o) => parseNdjson(o.bytes).map((r) => r.id));
    expect(ids).toHaveLength(summary.written);
  });
});

describe('the names an ingestion remembers', () => {
  it('refuses a name it holds, and forgets the oldest past its limit', () => {
    const names = new RecentNames(3);
    expect(['a', 'b', 'c'].map((n) => names.add(n))).toEqual([true, true, true]);
    expect(names.add('b')).toBe(false);
    expect(names.add('d')).toBe(true); // 'a' is forgotten
    expect(names.add('a')).toBe(true); // so 'b' is
    expect(names.add('c')).toBe(false);
    expect(names.add('d')).toBe(false);
    expect(names.add('b')).toBe(true);
  });
});
