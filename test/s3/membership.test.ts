import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { startS3, type TestS3 } from './server.js';

describe('S3Balancer membership', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('addShard, setShards and removeShard take S3 target specs', async () => {
    const client = s3.client();
    const balancer = createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }] });
    balancer.addShard({ client, bucket: 'bucket-b', prefix: 'm/' });
    expect(balancer.shards.map((s) => s.id)).toEqual(['bucket-a', 'bucket-b/m/']);
    expect(balancer.shards[1]!.target).toMatchObject({ bucket: 'bucket-b', prefix: 'm/' });
    expect(() => balancer.addShard({ client, bucket: 'x' })).toThrow(ConfigError);

    const kept = balancer.shards[0]!.target;
    await balancer.setShards([
      { client, bucket: 'bucket-a' },
      { id: 'c', client, bucket: 'bucket-c' },
    ]);
    expect(balancer.shards.map((s) => s.id)).toEqual(['bucket-a', 'c']);
    // An unchanged target keeps its target object (and with it the shard's load figures).
    expect(balancer.shards[0]!.target).toBe(kept);

    await balancer.removeShard('bucket-a');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => balancer.putObject({ key: `m${i}`, body: 'm' })),
    );
    expect(new Set(results.map((r) => r.bucket))).toEqual(new Set(['bucket-c']));
    await balancer.close();
  });
});
