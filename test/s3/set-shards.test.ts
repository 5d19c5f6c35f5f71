/**
 * S3 membership: setShards diffs by id, with targets given as client options.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Balancer } from '../../src/s3/index.js';
import { clientOptions, startS3, type TestS3 } from './server.js';

describe('S3Balancer setShards with client options', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('re-applying the same target list (options re-read from config) keeps the shards and their figures', async () => {
    const config = () => [
      { id: 'a', client: clientOptions(s3.endpoint), bucket: 'bucket-a' },
      { id: 'b', client: clientOptions(s3.endpoint), bucket: 'bucket-b' },
    ];
    const balancer = createS3Balancer({ targets: config() });
    const events: string[] = [];
    balancer.on('shardRemoved', (e) => events.push(`removed ${e.shardId}`));
    balancer.on('shardAdded', (e) => events.push(`added ${e.shardId}`));
    await Promise.all(
      Array.from({ length: 4 }, (_, i) => balancer.putObject({ key: `k${i}`, body: 'x' })),
    );
    const before = balancer.stats().shards.map((s) => [s.id, s.requests]);
    const clientsBefore = balancer.shards.map((s) => s.target.client);
    await balancer.setShards(config());
    const after = balancer.stats().shards.map((s) => [s.id, s.requests]);
    expect({
      events,
      after,
      sameClients: balancer.shards.every((s, i) => s.target.client === clientsBefore[i]),
    }).toEqual({ events: [], after: before, sameClients: true });
    await balancer.close();
  });
});
