import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Balancer } from '../../src/s3/index.js';
import { getBytes, startS3, type TestS3 } from './server.js';

describe('keys with "." and ".." path segments', () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('an object never lands outside its target (prefix + key in the target bucket)', async () => {
    const client = s3.client();
    // Two tenants' targets; a put is routed (by the rule) to tenant-1 only.
    const balancer = createS3Balancer({
      targets: [
        { id: 't1', client, bucket: 'bucket-a', prefix: 'tenant-1/', labels: { tenant: '1' } },
        { id: 't2', client, bucket: 'bucket-b', prefix: 'tenant-2/', labels: { tenant: '2' } },
      ],
    });
    const results: unknown[] = [];
    for (const key of ['../escaped-prefix', '../../bucket-b/tenant-2/escaped-bucket']) {
      results.push(
        await balancer.putObject({ key, body: 'tenant-1 data', require: { tenant: '1' } }).then(
          (r) => ({ bucket: r.bucket, key: r.key }),
          (e: Error) => e.name,
        ),
      );
    }
    await balancer.close();
    // Whatever happened to each put (refused, or stored), nothing is outside tenant-1's target.
    expect({
      results,
      outsidePrefix: (await getBytes(client, 'bucket-a', 'escaped-prefix'))?.toString(),
      inOtherTenant: (await getBytes(client, 'bucket-b', 'tenant-2/escaped-bucket'))?.toString(),
    }).toEqual({
      results: expect.any(Array),
      outsidePrefix: undefined,
      inOtherTenant: undefined,
    });
  });
});
