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

  it('main() spreads its objects over the three buckets of a given endpoint', async () => {
    const { main } = await loadExample();
    const lines: string[] = [];
    const summary = await main({
      endpoint: s3.endpoint,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      buckets: [...BUCKETS],
      objects: 90,
      log: (line) => lines.push(line),
    });
    expect(summary).toMatchObject({ written: 90, failed: 0 });
    expect(Object.keys(summary.perBucket).sort()).toEqual([...BUCKETS]);
    expect(Object.values(summary.perBucket).reduce((a, b) => a + b, 0)).toBe(90);
    for (const n of Object.values(summary.perBucket)) expect(n).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(/^written: 90, failed: 0, lost: 0/);
    // Each object is in exactly one bucket.
    const client = s3.client();
    let found = 0;
    for (const bucket of BUCKETS) {
      if ((await getBytes(client, bucket, 'shardwise-example/records/000042.json')) !== undefined)
        found++;
    }
    expect(found).toBe(1);
  });
});
