import { createHash } from 'node:crypto';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUCKETS, getBytes, startS3, type TestS3 } from './server.js';

/**
 * The example imports the package name (`shardwise/s3`), as a user would. tsx loads it the way
 * `npx tsx examples/s3-buckets.ts` does: the tsconfig `paths` map the name to the source, with
 * no build and no test-runner alias.
 */
async function loadExample(): Promise<typeof import('../../examples/s3-buckets.js')> {
  const { tsImport } = await import('tsx/esm/api');
  return tsImport('../../examples/s3-buckets.ts', import.meta.url);
}

describe('examples/s3-buckets.ts', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('main() writes every key twice, at once, and each key ends in exactly one bucket, byte-identical', async () => {
    const { main } = await loadExample();
    const lines: string[] = [];
    const summary = await main({
      endpoint: s3.endpoint,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      buckets: [...BUCKETS],
      objects: 300,
      log: (line) => lines.push(line),
    });
    expect(summary).toMatchObject({ written: 600, failed: 0, duplicates: 0, missing: 0 });
    expect(Object.keys(summary.perBucket).sort()).toEqual([...BUCKETS]);
    expect(Object.values(summary.perBucket).reduce((a, b) => a + b, 0)).toBe(300);
    for (const n of Object.values(summary.perBucket)) expect(n).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(/^written: 600 \(2 passes\), failed: 0, lost: 0/);
    // The object is the record's bytes, whichever pass wrote it last.
    const client = s3.client();
    const found: Uint8Array[] = [];
    for (const bucket of BUCKETS) {
      const bytes = await getBytes(client, bucket, 'shardwise-example/records/000042.json');
      if (bytes !== undefined) found.push(bytes);
    }
    expect(found).toHaveLength(1);
    expect(Buffer.from(found[0]!).toString()).toBe(
      JSON.stringify({ id: 42, value: Math.round(42 * 1.618) }),
    );
    // Every object holds exactly its record's bytes (its ETag is the MD5 of what was put).
    let checked = 0;
    for (const bucket of BUCKETS) {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: 'shardwise-example/', MaxKeys: 1000 }),
      );
      for (const object of page.Contents ?? []) {
        const id = Number(/(\d+)\.json$/.exec(object.Key!)![1]);
        const body = JSON.stringify({ id, value: Math.round(id * 1.618) });
        expect(object.ETag).toBe(`"${createHash('md5').update(body).digest('hex')}"`);
        checked++;
      }
    }
    expect(checked).toBe(300);
  });
});
