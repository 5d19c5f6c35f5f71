import { afterEach, describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { collectEvents, leaks } from '../secrets/scan.js';
import { type FakeS3, fakeClientOptions, MiB, startFakeS3 } from './fixtures/fake-s3.js';

const TOKEN = 'PlantSessionTok8x';
const SECRET_KEY = 'PlantSecretKey7x';
const AKID = 'PLANTAKID6X';

let fake: FakeS3 | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function outcome(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => v,
    (e) => e,
  );
}

describe('S3 secrets', () => {
  it('a server that quotes the session token only in its error message (no echoed header): not in the error', async () => {
    fake = await startFakeS3();
    fake.answer = (r) => ({
      status: 400,
      code: 'InvalidToken',
      message: `The provided token ${String(r.headers['x-amz-security-token'])} is malformed or otherwise invalid.`,
    });
    const client = createS3Client({
      ...fakeClientOptions(fake.endpoint),
      credentials: { accessKeyId: AKID, secretAccessKey: SECRET_KEY, sessionToken: TOKEN },
    });
    const s3 = createS3Balancer({ targets: [{ client, bucket: 'bkt-a' }] });
    const events = collectEvents(s3);
    const out = [
      await outcome(s3.putObject({ key: 'k', body: 'v' })),
      await outcome(s3.upload({ key: 'u', body: Buffer.alloc(6 * MiB), partSizeBytes: 5 * MiB })),
    ];
    await s3.close();
    client.destroy();
    expect(fake.seen[0]!.headers['x-amz-security-token']).toBe(TOKEN);
    expect((out[0] as Error).name).toBe('S3Error');
    for (const o of out) expect(leaks(o)).toEqual([]);
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
  });
});
