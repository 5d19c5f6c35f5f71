import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import {
  type FakeS3,
  fakeClientOptions,
  MiB,
  payload,
  startFakeS3,
  within,
} from '../hostile/fixtures/fake-s3.js';

let fake: FakeS3 | undefined;
const streams: Readable[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.destroy();
  await fake?.close();
  fake = undefined;
});

/** 11 MiB at once (two 5 MiB parts and 1 MiB over), then nothing: a source that went silent. */
function stalledBody(): Readable {
  const body = new Readable({ read() {} });
  body.push(payload(11 * MiB));
  streams.push(body);
  return body;
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

describe('a body stream that stalls during a multipart upload', () => {
  it('caller abort: the upload is aborted on the target and close({ drain: false }) resolves', async () => {
    fake = await startFakeS3();
    const f = fake;
    const client = createS3Client(fakeClientOptions(f.endpoint));
    const s3 = createS3Balancer({ targets: [{ client, bucket: 'bkt-a' }] });
    const ac = new AbortController();
    const up = s3
      .upload({
        key: 'k/stalled.bin',
        body: stalledBody(),
        partSizeBytes: 5 * MiB,
        signal: ac.signal,
      })
      .then(
        () => 'ok',
        (e: Error) => e.name,
      );
    // Both full parts were sent: the upload exists on the target, the body has gone silent.
    expect(
      await until(() => f.seen.filter((r) => r.op === 'UploadPart').length === 2, 10_000),
    ).toBe(true);
    ac.abort(new Error('caller gave up on the silent source'));
    const outcome = await within(up, 5_000);
    const closed = await within(
      s3.close({ drain: false }).then(() => 'closed'),
      5_000,
    );
    const aborted = await until(() => f.open.size === 0, 2_000);
    client.destroy();
    expect({ outcome, closed, aborted, open: f.open.size }).toEqual({
      outcome: 'Error',
      closed: 'closed',
      aborted: true,
      open: 0,
    });
  });

  it('attempt timeout: the timed-out upload is aborted on the target and close() resolves', async () => {
    fake = await startFakeS3();
    const f = fake;
    const client = createS3Client(fakeClientOptions(f.endpoint));
    const s3 = createS3Balancer({
      targets: [{ client, bucket: 'bkt-a' }],
      timeoutMs: 1_000,
      retry: false,
    });
    const outcome = await within(
      s3.upload({ key: 'k/stalled.bin', body: stalledBody(), partSizeBytes: 5 * MiB }).then(
        () => 'ok',
        (e: Error) => e.name,
      ),
      10_000,
    );
    const closed = await within(
      s3.close().then(() => 'closed'),
      5_000,
    );
    const aborted = await until(() => f.open.size === 0, 2_000);
    client.destroy();
    expect({ outcome, closed, aborted, open: f.open.size }).toEqual({
      outcome: 'TimeoutError',
      closed: 'closed',
      aborted: true,
      open: 0,
    });
  });
});
