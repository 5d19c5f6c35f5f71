import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { startS3, type TestS3 } from './server.js';

const MiB = 1024 * 1024;

/** The caller's own source fails after 6 MiB (a disk read error): no target had a part in it. */
async function* brokenSource() {
  yield Buffer.alloc(6 * MiB, 1);
  yield Buffer.alloc(5 * MiB, 2);
  throw new Error('disk read failed');
}

describe("a body that fails on the caller's side", () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it("is not charged to the healthy targets: no target is ejected for the caller's disk error", async () => {
    const client = s3.client();
    const balancer = createS3Balancer({
      targets: [
        { client, bucket: 'bucket-a' },
        { client, bucket: 'bucket-b' },
      ],
      picker: roundRobin(),
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
    });
    const ejected: string[] = [];
    balancer.on('eject', (e) => ejected.push(e.shardId));
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) {
      outcomes.push(
        await balancer
          .upload({ key: `broken/${i}`, body: () => brokenSource(), partSizeBytes: 5 * MiB })
          .then(
            () => 'ok',
            (e: Error) => e.name,
          ),
      );
    }
    const stats = balancer.stats();
    await balancer.close();
    // Both targets answered every call they got; only the caller's source failed.
    expect({
      outcomes: outcomes.length,
      ejected,
      ejectedNow: stats.shards.filter((s) => s.ejected).map((s) => s.id),
    }).toEqual({
      outcomes: 6,
      ejected: [],
      ejectedNow: [],
    });
  });
});
