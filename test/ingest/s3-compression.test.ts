/**
 * `s3.ingest({ compression })` against a real S3-protocol server (s3rver on 127.0.0.1): each
 * object decompresses to exactly its batch's records, is stored with its `ContentEncoding`, and
 * is named with the codec's suffix when `objectKey` uses it (none for a batch too short to
 * compress); a multipart object too; the ledgers count what was stored, per target; and a missing
 * zstd peer stops the ingestion before a record is read.
 */
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { createS3Balancer, type S3ObjectInfo } from '../../src/s3/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { replacePeerImport, ZSTD_INSTALL } from '../../src/transport/zstd.js';
import { BUCKETS, getBytes, startS3, type TestS3 } from '../s3/server.js';

const zstd = createRequire(import.meta.url)('@mongodb-js/zstd') as {
  decompress(bytes: Buffer): Promise<Buffer>;
};

interface Row {
  id: number;
  text: string;
}

const rows = (n: number, text: (id: number) => string = (id) => `row ${id} of the day`): Row[] =>
  Array.from({ length: n }, (_, id) => ({ id, text: text(id) }));

const ndjson = (records: readonly Row[]) => records.map((r) => `${JSON.stringify(r)}\n`).join('');

interface Stored {
  bucket: string;
  key: string;
  bytes: Buffer;
  encoding: string | undefined;
}

/** Every object under `prefix` in every test bucket: its bytes and its stored ContentEncoding. */
async function objects(client: S3Client, prefix: string): Promise<Stored[]> {
  const found: Stored[] = [];
  for (const bucket of BUCKETS) {
    const out = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    for (const item of out.Contents ?? []) {
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: item.Key! }));
      const bytes = (await getBytes(client, bucket, item.Key!))!;
      found.push({ bucket, key: item.Key!, bytes, encoding: head.ContentEncoding });
    }
  }
  return found;
}

async function decode(encoding: string | undefined, bytes: Buffer): Promise<string> {
  if (encoding === undefined) return bytes.toString();
  if (encoding === 'gzip') return zlib.gunzipSync(bytes).toString();
  if (encoding === 'br') return zlib.brotliDecompressSync(bytes).toString();
  if (encoding === 'zstd') return (await zstd.decompress(bytes)).toString();
  throw new Error(`unknown encoding ${encoding}`);
}

const firstId = (text: string) => (JSON.parse(text.slice(0, text.indexOf('\n'))) as Row).id;

describe('s3.ingest({ compression }) against s3rver', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  for (const [codec, suffix] of [
    ['gzip', '.gz'],
    ['zstd', '.zst'],
    ['br', '.br'],
  ] as const) {
    it(`${codec}: objects decompress to their records, named with ${suffix}, counted as stored`, async () => {
      const client = s3.client();
      const s3b = createS3Balancer({
        targets: BUCKETS.map((bucket) => ({ client, bucket, prefix: `c-${codec}/` })),
      });
      const infos: S3ObjectInfo[] = [];
      const data = rows(3_000);
      const summary = await s3b.ingest(data, {
        objectKey: (info) => {
          infos.push(info);
          return `${info.shardId}-${info.seq}.jsonl${info.suffix}`;
        },
        compression: codec,
        batch: { maxRecords: 500 },
      });
      expect(summary).toMatchObject({ written: 3_000, failed: 0, batches: 6 });
      expect(infos.map((i) => i.suffix)).toEqual(infos.map(() => suffix));
      const found = await objects(client, `c-${codec}/`);
      expect(found).toHaveLength(6);
      const texts: string[] = [];
      for (const object of found) {
        expect(object.key.endsWith(`.jsonl${suffix}`)).toBe(true);
        expect(object.encoding).toBe(codec);
        const text = await decode(codec, object.bytes);
        expect(object.bytes.byteLength).toBeLessThan(Buffer.byteLength(text) / 3);
        texts.push(text);
      }
      // Unkeyed batches are runs of the source: in order, they are the source's NDJSON.
      expect(texts.sort((a, b) => firstId(a) - firstId(b)).join('')).toBe(ndjson(data));
      // The ledgers: the bytes stored on each target, and before compression.
      const stored = (bucket: string) =>
        found.filter((o) => o.bucket === bucket).reduce((n, o) => n + o.bytes.byteLength, 0);
      expect(s3b.stats().shards.map((s) => s.bytes.wire)).toEqual(BUCKETS.map(stored));
      expect(summary.transit).toEqual({
        raw: Buffer.byteLength(ndjson(data)),
        wire: found.reduce((n, o) => n + o.bytes.byteLength, 0),
        received: 0,
      });
      await s3b.close();
    });
  }

  it('a batch shorter than minBytes is stored as it is: no encoding, an empty suffix', async () => {
    const client = s3.client();
    const s3b = createS3Balancer({ targets: [{ client, bucket: BUCKETS[0], prefix: 'short/' }] });
    const summary = await s3b.ingest(rows(4), {
      objectKey: ({ seq, suffix }) => `part-${seq}.jsonl${suffix}`,
      compression: 'gzip',
    });
    expect(summary.written).toBe(4);
    const found = await objects(client, 'short/');
    expect(found.map((o) => [o.key, o.encoding, o.bytes.toString()])).toEqual([
      ['short/part-0.jsonl', undefined, ndjson(rows(4))],
    ]);
    expect(summary.transit.raw).toBe(summary.transit.wire);
    await s3b.close();
  });

  it('a compressed object above the part size goes up in parts, whole, with its encoding', async () => {
    const client = s3.client();
    const s3b = createS3Balancer({ targets: [{ client, bucket: BUCKETS[1], prefix: 'mp/' }] });
    const MiB = 1024 * 1024;
    // Records of random letters: gzip keeps most of their size, so the object passes 5 MiB.
    const random = seededRandom(11);
    const letters = (n: number) =>
      Array.from({ length: n }, () => String.fromCharCode(97 + Math.floor(random() * 26))).join('');
    const data = rows(10_000, () => letters(1_000));
    const summary = await s3b.ingest(data, {
      objectKey: ({ seq, suffix }) => `big-${seq}.jsonl${suffix}`,
      compression: 'gzip',
      batch: { maxBytes: 12 * MiB, maxRecords: 100_000 },
      partSizeBytes: 5 * MiB,
    });
    expect(summary).toMatchObject({ written: 10_000, batches: 1 });
    const [object] = await objects(client, 'mp/');
    expect(object!.key).toBe('mp/big-0.jsonl.gz');
    expect(object!.encoding).toBe('gzip');
    expect(object!.bytes.byteLength).toBeGreaterThan(5 * MiB);
    expect(await decode('gzip', object!.bytes)).toBe(ndjson(data));
    // Each part counted as S3 stored it; the raw shares add up to the body's.
    expect(summary.transit).toEqual({
      raw: Buffer.byteLength(ndjson(data)),
      wire: object!.bytes.byteLength,
      received: 0,
    });
    await s3b.close();
  });

  it('a missing zstd peer: a ConfigError with the install command, before a record is read', async () => {
    const client = s3.client();
    const s3b = createS3Balancer({ targets: [{ client, bucket: BUCKETS[2], prefix: 'nozstd/' }] });
    const restore = replacePeerImport(async () => {
      throw new Error("Cannot find package '@mongodb-js/zstd'");
    });
    try {
      let read = 0;
      const source = (function* () {
        for (const row of rows(100)) {
          read++;
          yield row;
        }
      })();
      const error = await s3b
        .ingest(source, { objectKey: ({ seq }) => `${seq}`, compression: 'zstd' })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('s3.ingest.compression');
      expect((error as Error).message).toContain(ZSTD_INSTALL);
      expect(read).toBe(0);
      expect(await objects(client, 'nozstd/')).toEqual([]);
    } finally {
      restore();
    }
    await s3b.close();
  });
});
