import { describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { fakeClientOptions, startFakeS3 } from './fixtures/fake-s3.js';

describe('request metadata', () => {
  it("a metadata value no HTTP header can carry is the caller's fault: refused before any call, no target charged or ejected", async () => {
    const f = await startFakeS3();
    const client = createS3Client(fakeClientOptions(f.endpoint));
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
        { client, bucket: 'bkt-c' },
      ],
    });
    let ejects = 0;
    let retries = 0;
    s3.on('eject', () => ejects++);
    s3.on('retry', () => retries++);
    const names: string[] = [];
    for (let i = 0; i < 10; i++) {
      await s3
        .putObject({
          key: `a${i}`,
          body: 'x',
          metadata: { note: 'line\r\nx-amz-acl: public-read ☕' },
        })
        .catch((e: Error) => names.push(e.name));
    }
    const failures = s3.stats().shards.reduce((n, s) => n + s.failures, 0);
    await s3.close();
    client.destroy();
    await f.close();
    expect(f.seen.length).toBe(0); // nothing ever reached a target
    expect({ names: [...new Set(names)], retries, failures, ejects }).toEqual({
      names: ['ConfigError'],
      retries: 0,
      failures: 0,
      ejects: 0,
    });
  });
});
