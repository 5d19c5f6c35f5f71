import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Balancer, roundRobin } from '../../src/s3/index.js';
import { type FakeS3, s3Error, startFake } from './fake-s3.js';

const MiB = 1024 * 1024;

describe('S3 bodies that fail or are left behind', () => {
  let fake: FakeS3;
  let dir: string;
  beforeAll(async () => {
    fake = await startFake();
    dir = await mkdtemp(join(tmpdir(), 'sw-s3-attack-'));
  });
  afterAll(async () => {
    await fake?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('putObject: a stream body that fails (disk read) fails the call at once, no retry, no target charged, no uncaught error', async () => {
    fake.script = undefined;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    // Vitest also reports these; count them ourselves too.
    process.prependListener('uncaughtException', onUncaught);
    const balancer = createS3Balancer({
      targets: [
        { client: fake.client(), bucket: 'bkt-a' },
        { client: fake.client(), bucket: 'bkt-b' },
      ],
      picker: roundRobin(),
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
      // One failure the target's fault would eject it: the body's failure must not.
      health: { consecutiveFailures: 1, maxEjectedPercent: 100 },
    });
    const picks: string[] = [];
    const ejected: string[] = [];
    balancer.on('pick', (e) => picks.push(e.shard.id));
    balancer.on('eject', (e) => ejected.push(e.shardId));
    const error = await balancer
      .putObject({
        key: 'broken.bin',
        body: () =>
          Readable.from(
            (async function* () {
              yield Buffer.alloc(1024, 1);
              const err = new Error('disk read failed') as Error & { code: string };
              err.code = 'EIO';
              throw err;
            })(),
          ),
        timeoutMs: 1_500,
      })
      .catch((e: unknown) => e as Error);
    const ejections = balancer.stats().shards.map((s) => [s.id, s.ejections]);
    await balancer.close();
    process.removeListener('uncaughtException', onUncaught);
    // Before: the error was uncaught (3 times), each attempt hung to its 1.5 s timeout, and
    // all 3 were retried on both targets and counted against their health.
    expect({
      message: (error as Error).message,
      retryable: (error as { retryable?: unknown }).retryable,
      attempts: picks.length,
      ejected,
      ejections,
      uncaught: uncaught.length,
    }).toEqual({
      message: 'disk read failed',
      retryable: false,
      attempts: 1,
      ejected: [],
      ejections: [
        ['bkt-a', 0],
        ['bkt-b', 0],
      ],
      uncaught: 0,
    });
  });

  it('upload: a file stream from the body factory is destroyed when CreateMultipartUpload is refused (no fd leak)', async () => {
    const path = join(dir, 'eleven.bin');
    await writeFile(path, Buffer.alloc(11 * MiB, 7));
    const streams: ReturnType<typeof createReadStream>[] = [];
    fake.script = (req, res) => {
      if (req.op === 'CreateMultipartUpload' && req.bucket === 'bkt-a') {
        s3Error(res, 500, 'InternalError');
        return true;
      }
      return false;
    };
    const balancer = createS3Balancer({
      targets: [
        { client: fake.client(), bucket: 'bkt-a' },
        { client: fake.client(), bucket: 'bkt-b' },
      ],
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
    });
    const res = await balancer.upload({
      key: 'file.bin',
      body: () => {
        const s = createReadStream(path, { highWaterMark: 1 * MiB });
        streams.push(s);
        return s;
      },
      partSizeBytes: 5 * MiB,
    });
    await new Promise((r) => setTimeout(r, 50));
    await balancer.close();
    fake.script = undefined;
    expect(res.bucket).toBe('bkt-b');
    // The first attempt's stream (bkt-a refused the upload) must be let go: destroyed, fd closed.
    expect(streams.map((s) => s.destroyed)).toEqual([true, true]);
  });
});
