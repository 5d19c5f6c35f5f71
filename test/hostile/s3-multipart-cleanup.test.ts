import { afterEach, describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import {
  type Answer,
  type FakeS3,
  fakeClientOptions,
  MiB,
  payload,
  startFakeS3,
  within,
} from './fixtures/fake-s3.js';

let fake: FakeS3 | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('multipart cleanup', () => {
  it('upload failing mid-way on one target is aborted there and lands whole on the other', async () => {
    fake = await startFakeS3();
    const f = fake;
    f.answer = (r) =>
      r.bucket === 'bkt-a' && r.op === 'UploadPart' && r.partNumber === 2
        ? { status: 500, code: 'InternalError' }
        : 'ok';
    const client = createS3Client(fakeClientOptions(f.endpoint));
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
      ],
      picker: (await import('../../src/index.js')).roundRobin(),
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
      health: false,
    });
    const body = payload(11 * MiB);
    const res = await s3.upload({
      key: 'k/big.bin',
      body,
      partSizeBytes: 5 * MiB,
      partConcurrency: 1,
    });
    await s3.close();
    client.destroy();
    expect(res.bucket).toBe('bkt-b');
    expect(f.open.size).toBe(0);
    expect(f.seen.filter((r) => r.op === 'AbortMultipartUpload').map((r) => r.bucket)).toEqual([
      'bkt-a',
    ]);
    expect(f.objects.get('bkt-b/k/big.bin')?.body.equals(body)).toBe(true);
    expect(f.objects.has('bkt-a/k/big.bin')).toBe(false);
  });

  it('close() resolves even when a target never answers the AbortMultipartUpload of a failed upload', async () => {
    fake = await startFakeS3();
    const f = fake;
    f.answer = (r) => {
      if (r.bucket !== 'bkt-a') return 'ok';
      if (r.op === 'UploadPart') return { status: 500, code: 'InternalError' };
      if (r.op === 'AbortMultipartUpload') return 'hang';
      return 'ok';
    };
    const client = createS3Client(fakeClientOptions(f.endpoint));
    const s3 = createS3Balancer({
      targets: [
        { client, bucket: 'bkt-a' },
        { client, bucket: 'bkt-b' },
      ],
      picker: (await import('../../src/index.js')).roundRobin(),
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
      health: false,
      timeoutMs: 300,
    });
    const outcome = await within(
      s3.upload({ key: 'k/big.bin', body: payload(11 * MiB), partSizeBytes: 5 * MiB }).then(
        (r) => r.bucket,
        (e: Error) => e.name,
      ),
      10_000,
    );
    expect(outcome).toBe('bkt-b');
    // Every attempt has a deadline; a draining-free close must not wait forever on a trickling target.
    const closed = await within(
      s3.close({ drain: false, timeoutMs: 500 }).then(() => 'closed'),
      8_000,
    );
    client.destroy();
    expect(closed).toBe('closed');
  });

  it('close({ drain: false }) during a multipart upload resolves only after the upload was aborted on the server', async () => {
    fake = await startFakeS3();
    const f = fake;
    let parts = 0;
    let inPart!: () => void;
    const partStarted = new Promise<void>((r) => {
      inPart = r;
    });
    f.answer = (r) => {
      if (r.op === 'UploadPart' && ++parts >= 2) {
        inPart();
        return 'hang';
      }
      return 'ok';
    };
    const s3 = createS3Balancer({
      // a client the balancer builds (and destroys on close)
      targets: [{ client: fakeClientOptions(f.endpoint), bucket: 'bkt-a' }],
    });
    const up = s3
      .upload({
        key: 'k/big.bin',
        body: payload(16 * MiB),
        partSizeBytes: 5 * MiB,
        partConcurrency: 1,
      })
      .then(
        () => 'ok',
        (e: Error) => e.name,
      );
    await partStarted;
    const closed = await within(
      s3.close({ drain: false }).then(() => 'closed'),
      8_000,
    );
    expect(closed).toBe('closed');
    expect(await up).toBe('BalancerClosedError');
    // When close() resolves the cleanup has run: no multipart upload left open on the target.
    const aborts = f.seen.filter((r) => r.op === 'AbortMultipartUpload').length;
    const open = f.open.size;
    await new Promise((r) => setTimeout(r, 300));
    expect({ aborts, open }).toEqual({ aborts: 1, open: 0 });
    expect(f.open.size).toBe(0);
  });

  it('an abort fired while CreateMultipartUpload is in flight leaves no open upload behind', async () => {
    fake = await startFakeS3();
    const f = fake;
    const ac = new AbortController();
    f.answer = async (r): Promise<Answer> => {
      if (r.op === 'CreateMultipartUpload') {
        ac.abort(new Error('caller gave up'));
        await new Promise((res) => setTimeout(res, 50));
      }
      return 'ok';
    };
    const s3 = createS3Balancer({
      targets: [{ client: fakeClientOptions(f.endpoint), bucket: 'bkt-a' }],
    });
    const out = await s3
      .upload({
        key: 'k/big.bin',
        body: payload(11 * MiB),
        partSizeBytes: 5 * MiB,
        signal: ac.signal,
      })
      .then(
        () => 'ok',
        (e: Error) => e.name,
      );
    expect(out).not.toBe('ok');
    await s3.close();
    await new Promise((r) => setTimeout(r, 200));
    expect(f.seen.filter((r) => r.op === 'CreateMultipartUpload').length).toBe(1);
    expect([...f.open.keys()]).toEqual([]);
  });

  it('after a caller abort mid-upload, a draining close() resolves only once the AbortMultipartUpload was answered', async () => {
    fake = await startFakeS3();
    const ac = new AbortController();
    fake.answer = (r) => {
      if (r.op === 'UploadPart') {
        ac.abort(new Error('stop'));
        return 'hang';
      }
      return 'ok';
    };
    const client = createS3Client(fakeClientOptions(fake.endpoint));
    const s3 = createS3Balancer({ targets: [{ client, bucket: 'bkt-a' }] });
    const out = await s3
      .upload({ key: 'k', body: payload(11 * MiB), partSizeBytes: 5 * MiB, signal: ac.signal })
      .then(
        () => 'ok',
        (e: Error) => e.name,
      );
    await s3.close();
    client.destroy();
    const atClose = {
      aborts: fake.seen.filter((r) => r.op === 'AbortMultipartUpload').length,
      open: fake.open.size,
    };
    await new Promise((r) => setTimeout(r, 300));
    const later = {
      aborts: fake.seen.filter((r) => r.op === 'AbortMultipartUpload').length,
      open: fake.open.size,
    };
    expect(out).not.toBe('ok');
    expect(later).toEqual({ aborts: 1, open: 0 }); // the cleanup does run, eventually
    expect(atClose).toEqual({ aborts: 1, open: 0 }); // but close() did not wait for it
  });
});
