import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Balancer } from '../../src/s3/index.js';
import { type FakeS3, startFake } from './fake-s3.js';

const MiB = 1024 * 1024;

/** Resolves with 'settled' or 'still waiting' after `ms` (real time, bounded). */
function within(p: Promise<unknown>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.then(
      () => 'settled',
      () => 'settled',
    ),
    new Promise<string>((r) => {
      timer = setTimeout(() => r('still waiting'), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

describe("multipart cleanup is bounded by the attempt's timeoutMs", () => {
  let fake: FakeS3;
  beforeAll(async () => {
    fake = await startFake();
  });
  afterAll(async () => {
    await fake?.close();
  });

  /**
   * An 11 MiB upload with `timeoutMs: 300` on a target that leaves `hung` calls unanswered: it
   * times out, and `close()` must settle within 3 s (the cleanup's deadline is the request's).
   */
  async function closesAfterTimeout(key: string, hung: (op: string) => boolean): Promise<void> {
    fake.script = (req) => hung(req.op);
    const balancer = createS3Balancer({
      targets: [{ client: fake.client(), bucket: 'bkt-a' }],
      retry: { attempts: 1 },
    });
    const error = await balancer
      .upload({ key, body: Buffer.alloc(11 * MiB), partSizeBytes: 5 * MiB, timeoutMs: 300 })
      .catch((e: unknown) => e as Error);
    expect((error as Error).message).toMatch(/timed out after 300 ms/);
    const closing = balancer.close();
    const state = await within(closing, 3_000);
    fake.script = undefined;
    expect(state).toBe('settled');
    await closing.catch(() => {});
  }

  it('upload({ timeoutMs: 300 }): a hung AbortMultipartUpload holds close() at most ~300 ms, not 60 s', async () => {
    // Parts and the abort never get an answer (a target that went silent). Documented: "the
    // abort has its own deadline (the attempt's `timeoutMs`, at most 60 s)".
    await closesAfterTimeout(
      'big.bin',
      (op) => op === 'UploadPart' || op === 'AbortMultipartUpload',
    );
  }, 70_000);

  it('upload({ timeoutMs: 300 }): a hung CreateMultipartUpload holds close() at most ~300 ms, not 60 s', async () => {
    await closesAfterTimeout('big2.bin', (op) => op === 'CreateMultipartUpload');
  }, 70_000);
});
