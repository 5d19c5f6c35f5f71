import { afterEach, describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
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

const aborts = (f: FakeS3) => f.seen.filter((r) => r.op === 'AbortMultipartUpload');

/** Polls `check` until it holds; bounded (10 s of real time), so a stuck upload fails the test. */
async function until(check: () => boolean): Promise<void> {
  for (let waited = 0; !check(); waited += 10) {
    if (waited > 10_000) throw new Error('the condition did not hold within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
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
    // Time runs on the balancer's clock only: the attempt's timeout and the Abort's deadline pass
    // when the test says, never because the machine is slow (at load 8 on 2 cores the upload to
    // bkt-b once took longer than a real 300 ms, and timed out).
    const clock = new ManualClock();
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
      clock,
      random: seededRandom(4),
    });
    const outcome = s3
      .upload({ key: 'k/big.bin', body: payload(11 * MiB), partSizeBytes: 5 * MiB })
      .then(
        (r) => r.bucket,
        (e: Error) => e.name,
      );
    // Round robin: bkt-a first. Its parts fail, and the upload's Abort there never answers.
    await until(() => aborts(f).length === 1);
    expect(clock.now()).toBe(0);
    // The Abort's deadline is the attempt's 300 ms, on the balancer's clock: the attempt ends.
    clock.advance(300);
    // Its retry waits a backoff of 1–2 ms on the clock, then goes to bkt-b, where no clock time
    // passes again: nothing can time it out.
    await until(() => clock.nextTimerAt() !== undefined && clock.nextTimerAt()! <= 302);
    clock.advance(clock.nextTimerAt()! - clock.now());
    expect(await within(outcome, 10_000)).toBe('bkt-b');
    expect(f.objects.has('bkt-b/k/big.bin')).toBe(true);
    // Every attempt has a deadline; a draining-free close must not wait forever on a trickling target.
    const closed = await within(
      s3.close({ drain: false, timeoutMs: 500 }).then(() => 'closed'),
      8_000,
    );
    client.destroy();
    expect(closed).toBe('closed');
    // One Abort, to bkt-a, never answered: the upload there is still open on the server.
    expect(aborts(f).map((r) => r.bucket)).toEqual(['bkt-a']);
    expect([...f.open.values()].map((u) => u.bucket)).toEqual(['bkt-a']);
  });

  it("the Abort's deadline runs on the balancer's clock, as every other wait does", async () => {
    fake = await startFakeS3();
    const f = fake;
    f.answer = (r) => {
      if (r.op === 'UploadPart') return { status: 500, code: 'InternalError' };
      if (r.op === 'AbortMultipartUpload') return 'hang';
      return 'ok';
    };
    const clock = new ManualClock();
    const client = createS3Client(fakeClientOptions(f.endpoint));
    const s3 = createS3Balancer({
      targets: [{ client, bucket: 'bkt-a' }],
      retry: { attempts: 1 },
      health: false,
      timeoutMs: 300,
      clock,
      random: seededRandom(4),
    });
    const outcome = s3
      .upload({ key: 'k/big.bin', body: payload(11 * MiB), partSizeBytes: 5 * MiB })
      .then(
        () => 'ok',
        (e: Error) => e.name,
      );
    await until(() => aborts(f).length === 1);
    // A draining close waits for the upload's cleanup, which waits for the Abort: while the
    // clock stands still, however much real time passes, neither ends (with a real-time deadline
    // both did after 300 ms).
    const closing = s3.close().then(() => 'closed');
    expect(await within(closing, 600)).toBe('timeout');
    clock.advance(300);
    expect(await within(closing, 8_000)).toBe('closed');
    expect(await outcome).toBe('RetriesExhaustedError'); // its one attempt timed out
    client.destroy();
    expect(aborts(f)).toHaveLength(1);
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
