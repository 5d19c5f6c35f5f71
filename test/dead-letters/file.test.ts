/**
 * The dead-letter file: each line reads back to the record that failed and its error; bytes
 * round-trip; no secret reaches the disk; a file that cannot be written rejects with a
 * DeadLetterError; lines share fsyncs by window and count, and an append resolves only once its
 * line has been fsynced. fsyncs are counted through a recording file system on a virtual clock.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, RetriesExhaustedError, TimeoutError } from '../../src/index.js';
import type { DurableFs } from '../../src/sources/file-system.js';
import {
  type DeadLetterEntry,
  DeadLetterError,
  DeadLetterFile,
  readDeadLetters,
} from '../../src/sources/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { flush } from '../helpers.js';
import { recordingFs, tempDir } from '../sources/files.js';

const root = tempDir('dead-letters');
let files = 0;
/** A new file path in a directory of its own (the recording fs names it `f.ndjson`). */
function freshPath(): { dir: string; path: string } {
  const dir = join(root, `d${++files}`);
  mkdirSync(dir);
  return { dir, path: join(dir, 'f.ndjson') };
}

const AT = Date.parse('2025-03-04T05:06:07.089Z');

async function entries(path: string): Promise<DeadLetterEntry[]> {
  const out: DeadLetterEntry[] = [];
  for await (const entry of readDeadLetters(path, { entries: true })) out.push(entry);
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

/** Whether `promise` has settled (after letting pending callbacks run). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await flush();
  return done;
}

const count = (calls: readonly string[], prefix: string) =>
  calls.filter((c) => c.startsWith(prefix)).length;

describe('dead-letter lines', () => {
  it('parse back to the records that failed, with their errors, outcome and time', async () => {
    const { path } = freshPath();
    const letters = await DeadLetterFile.open(path, { now: () => AT });
    const exhausted = new RetriesExhaustedError(
      [
        { shardId: 'a', error: new Error('socket hang up'), elapsedMs: 5 },
        { shardId: 'b', error: new Error('HTTP 503'), elapsedMs: 9 },
      ],
      'attempts exhausted',
    );
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    await Promise.all([
      letters.append({ record: { id: 1, tags: ['x'] }, error: exhausted, outcome: 'failed' }),
      letters.append({
        record: '{"id":2}',
        error: new TimeoutError(2500, 'c'),
        outcome: 'uncertain',
      }),
      letters.append({ record: 3, error: reset, outcome: 'failed', shard: 'd', attempts: 2 }),
      letters.append({ record: null, error: 'a thrown string', outcome: 'failed' }),
    ]);
    await letters.close();
    const at = '2025-03-04T05:06:07.089Z';
    expect(await entries(path)).toEqual([
      {
        record: { id: 1, tags: ['x'] },
        error: {
          code: 'SHARDWISE_RETRIES_EXHAUSTED',
          message: exhausted.message,
          shard: 'b',
          attempts: 2,
        },
        outcome: 'failed',
        at,
      },
      {
        record: '{"id":2}', // a string stays a string (a pre-encoded line is resent untouched)
        error: {
          code: 'SHARDWISE_TIMEOUT',
          message: 'attempt timed out after 2500 ms on shard "c"',
          shard: 'c',
          attempts: 1,
        },
        outcome: 'uncertain',
        at,
      },
      {
        record: 3,
        error: { code: 'ECONNRESET', message: 'read ECONNRESET', shard: 'd', attempts: 2 },
        outcome: 'failed',
        at,
      },
      {
        record: null,
        error: { code: 'Error', message: 'a thrown string', shard: null, attempts: 0 },
        outcome: 'failed',
        at,
      },
    ]);
    // One NDJSON line per record, in the documented shape.
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(Object.keys(JSON.parse(lines[0]!))).toEqual(['record', 'error', 'outcome', 'at']);
  });

  it('records sharing one error (a failed batch) each carry it, with their own shard and attempts', async () => {
    const { path } = freshPath();
    const letters = await DeadLetterFile.open(path, { windowMs: 0 });
    const shared = Object.assign(new Error('HTTP 500'), { code: 'SHARDWISE_HTTP' });
    await Promise.all([
      letters.append({ record: 1, error: shared, outcome: 'failed', shard: 'a', attempts: 3 }),
      letters.append({ record: 2, error: shared, outcome: 'failed', shard: 'b', attempts: 3 }),
      letters.append({ record: 3, error: shared, outcome: 'failed', shard: 'b', attempts: 1 }),
      letters.append({
        record: 4,
        error: new Error('other'),
        outcome: 'failed',
        shard: 'b',
        attempts: 1,
      }),
      letters.append({ record: 5, error: shared, outcome: 'uncertain', shard: 'b', attempts: 1 }),
    ]);
    await letters.close();
    expect(
      (await entries(path)).map((e) => [
        e.record,
        e.error.message,
        e.error.shard,
        e.error.attempts,
        e.outcome,
      ]),
    ).toEqual([
      [1, 'HTTP 500', 'a', 3, 'failed'],
      [2, 'HTTP 500', 'b', 3, 'failed'],
      [3, 'HTTP 500', 'b', 1, 'failed'],
      [4, 'other', 'b', 1, 'failed'],
      [5, 'HTTP 500', 'b', 1, 'uncertain'],
    ]);
  });

  it('round-trips bytes exactly (as base64 with a marker), a view into a larger buffer too', async () => {
    const { path } = freshPath();
    const letters = await DeadLetterFile.open(path);
    const bytes = Buffer.from([0, 255, 10, 13, 0xc3, 0x28, 34, 92]);
    const backing = Buffer.from('xxxxHELLOxxxx');
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 4, 5);
    await letters.append({ record: bytes, error: new Error('no'), outcome: 'failed' });
    await letters.append({ record: view, error: new Error('no'), outcome: 'failed' });
    await letters.close();
    const records: unknown[] = [];
    for await (const record of readDeadLetters(path)) records.push(record);
    expect(records).toHaveLength(2);
    expect(Buffer.isBuffer(records[0])).toBe(true);
    expect((records[0] as Buffer).equals(bytes)).toBe(true);
    expect((records[1] as Buffer).toString()).toBe('HELLO');
    expect(JSON.parse(readFileSync(path, 'utf8').split('\n')[0]!).recordEncoding).toBe('base64');
  });

  it('holds no secret planted in an error: URL credentials, queries, tokens, credential fields', async () => {
    const { path } = freshPath();
    const letters = await DeadLetterFile.open(path);
    const secrets = [
      'pa55w0rd-xyz',
      'qs-token-123456',
      'bearer-token-abcdef',
      'hunter2-json',
      'AKIASECRETKEY99',
    ];
    const inUrl = new Error(
      'POST http://loader:pa55w0rd-xyz@10.0.0.1:8080/ingest?token=qs-token-123456 failed',
    );
    const inHeader = new Error('refused: Authorization: Bearer bearer-token-abcdef');
    const inJson = Object.assign(new Error('echo {"password":"hunter2-json"}'), {
      code: 'SHARDWISE_HTTP',
    });
    const sdk = Object.assign(new Error('denied for AKIASECRETKEY99'), {
      name: 'AccessDenied',
      AWSAccessKeyId: 'AKIASECRETKEY99',
    });
    const nested = new RetriesExhaustedError(
      [{ shardId: 'a', error: inUrl, elapsedMs: 1 }],
      'attempts exhausted',
    );
    for (const error of [inUrl, inHeader, inJson, sdk, nested]) {
      await letters.append({ record: { id: 1 }, error, outcome: 'failed' });
    }
    await letters.close();
    const text = readFileSync(path, 'utf8');
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text.split('\n').filter(Boolean)).toHaveLength(5);
    expect(text).toContain('10.0.0.1:8080/ingest'); // what failed is still said
  });
});

describe('a dead-letter file that cannot be written', () => {
  it('a path whose parent is a regular file, or a directory: open rejects with DeadLetterError naming it', async () => {
    const { dir } = freshPath();
    writeFileSync(join(dir, 'plain'), 'x');
    for (const path of [join(dir, 'plain', 'f.ndjson'), dir]) {
      const error = await rejection(DeadLetterFile.open(path));
      expect(error, path).toBeInstanceOf(DeadLetterError);
      expect((error as DeadLetterError).code).toBe('SHARDWISE_DEAD_LETTER');
      expect((error as DeadLetterError).path).toBe(path);
      expect((error as Error).message).toContain(path);
    }
  });

  it.runIf(existsSync('/dev/full'))(
    'a full disk (/dev/full): append rejects with DeadLetterError',
    async () => {
      const letters = await DeadLetterFile.open('/dev/full', { windowMs: 0 });
      const error = await rejection(
        letters.append({ record: { id: 1 }, error: new Error('x'), outcome: 'failed' }),
      );
      expect(error).toBeInstanceOf(DeadLetterError);
      expect((error as Error).message).toMatch(/\/dev\/full could not be written.*ENOSPC/);
      await rejection(letters.close());
    },
  );

  for (const failing of ['write', 'sync'] as const) {
    it(`a failing ${failing}: the batch rejects, and so does every later append and close()`, async () => {
      const { dir, path } = freshPath();
      const { fs } = recordingFs(dir, (call) => call === `${failing} f.ndjson`);
      const clock = new ManualClock();
      const letters = await DeadLetterFile.open(path, { clock, fs });
      const first = letters.append({ record: 1, error: new Error('x'), outcome: 'failed' });
      const second = letters.append({ record: 2, error: new Error('x'), outcome: 'failed' });
      clock.advance(50);
      const error = await rejection(first);
      expect(error).toBeInstanceOf(DeadLetterError);
      expect((error as Error).message).toContain(
        failing === 'write' ? 'could not be written' : 'could not be made durable (fsync)',
      );
      expect(await rejection(second)).toBe(error);
      // Never written again after a failure (what the failed fsync covered is unknown).
      expect(await rejection(letters.append({ record: 3, error: 'x', outcome: 'failed' }))).toBe(
        error,
      );
      expect(await rejection(letters.close())).toBe(error);
      expect(letters.written).toBe(0);
    });
  }

  it('a record with no JSON form rejects its append with a DeadLetterError', async () => {
    const { path } = freshPath();
    const letters = await DeadLetterFile.open(path, { windowMs: 0 });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const record of [10n, cyclic, undefined]) {
      const error = await rejection(letters.append({ record, error: 'x', outcome: 'failed' }));
      expect(error).toBeInstanceOf(DeadLetterError);
      expect((error as Error).message).toContain('no JSON form');
    }
    await letters.close();
  });
});

describe('fsync batching', () => {
  it('lines appended at once share one fsync per maxLines; the rest wait for the window', async () => {
    const { dir, path } = freshPath();
    const { fs, calls } = recordingFs(dir);
    const clock = new ManualClock();
    const letters = await DeadLetterFile.open(path, { clock, fs, maxLines: 1000, windowMs: 50 });
    const opened = count(calls, 'sync');
    const appends = Array.from({ length: 2500 }, (_, i) =>
      letters.append({ record: { i }, error: 'x', outcome: 'failed' }),
    );
    await Promise.all(appends.slice(0, 2000));
    expect(count(calls, 'sync f.ndjson')).toBe(2);
    expect(count(calls, 'write f.ndjson')).toBe(2);
    expect(await settled(appends[2000]!)).toBe(false);
    clock.advance(49);
    expect(await settled(appends[2499]!)).toBe(false);
    clock.advance(1);
    await Promise.all(appends);
    expect(count(calls, 'sync f.ndjson')).toBe(3);
    expect(count(calls, 'sync') - opened).toBe(3);
    expect(letters.written).toBe(2500);
    await letters.close();
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(2500);
  });

  it('lines within one window share its fsync; a line after it opens the next window', async () => {
    const { dir, path } = freshPath();
    const { fs, calls } = recordingFs(dir);
    const clock = new ManualClock();
    const letters = await DeadLetterFile.open(path, { clock, fs, windowMs: 50 });
    const at = (ms: number) => clock.advanceTo(ms);
    const append = (i: number) => letters.append({ record: i, error: 'x', outcome: 'failed' });
    const early = [append(0)];
    at(10);
    early.push(append(1));
    at(40);
    early.push(append(2));
    at(49);
    expect(await settled(early[0]!)).toBe(false);
    at(50);
    await Promise.all(early);
    expect(count(calls, 'sync f.ndjson')).toBe(1);
    at(60);
    const late = append(3);
    at(109);
    expect(await settled(late)).toBe(false);
    at(110);
    await late;
    expect(count(calls, 'sync f.ndjson')).toBe(2);
    await letters.close();
  });

  it('an append resolves only once its fsync has finished; batches closed meanwhile share the next', async () => {
    const { dir, path } = freshPath();
    const { fs: recording, calls } = recordingFs(dir);
    let release!: () => void;
    let gate: Promise<void> = new Promise((resolve) => {
      release = resolve;
    });
    const gated: DurableFs = {
      ...recording,
      async open(p, flags) {
        const file = await recording.open(p, flags);
        return {
          ...file,
          sync: async () => {
            if (p === path) await gate;
            await file.sync();
          },
        };
      },
    };
    const clock = new ManualClock();
    const letters = await DeadLetterFile.open(path, { clock, fs: gated, maxLines: 2 });
    const append = (i: number) => letters.append({ record: i, error: 'x', outcome: 'failed' });
    const first = [append(0), append(1)]; // a full batch: written now, its fsync held
    await flush();
    expect(await settled(first[0]!)).toBe(false);
    expect(letters.written).toBe(0);
    const more = [append(2), append(3), append(4), append(5)]; // two batches, sealed while held
    release();
    await Promise.all(first);
    gate = Promise.resolve();
    await Promise.all(more);
    expect(count(calls, 'write f.ndjson')).toBe(2);
    expect(count(calls, 'sync f.ndjson')).toBe(2);
    expect(letters.written).toBe(6);
    await letters.close();
    expect((await entries(path)).map((e) => e.record)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('close() writes what waits for its window at once; an append after it rejects', async () => {
    const { dir, path } = freshPath();
    const { fs, calls } = recordingFs(dir);
    const clock = new ManualClock();
    const letters = await DeadLetterFile.open(path, { clock, fs });
    const pending = letters.append({ record: 'x', error: 'x', outcome: 'failed' });
    await letters.close();
    await pending;
    expect(count(calls, 'sync f.ndjson')).toBe(1);
    expect(calls.at(-1)).toBe('close f.ndjson');
    const error = await rejection(letters.append({ record: 'y', error: 'x', outcome: 'failed' }));
    expect(error).toBeInstanceOf(DeadLetterError);
    expect((await entries(path)).map((e) => e.record)).toEqual(['x']);
  });

  it('the file is opened to append, and its directory fsynced once it exists', async () => {
    const { dir, path } = freshPath();
    writeFileSync(
      path,
      '{"record":"old","error":{"code":"E","message":"m","shard":null,"attempts":0},"outcome":"failed","at":"2025-01-01T00:00:00.000Z"}\n',
    );
    const { fs, calls } = recordingFs(dir);
    const letters = await DeadLetterFile.open(path, { fs, windowMs: 0 });
    expect(calls).toEqual(['open f.ndjson a', 'open . r', 'sync .', 'close .']);
    await letters.append({ record: 'new', error: 'x', outcome: 'failed' });
    await letters.close();
    expect((await entries(path)).map((e) => e.record)).toEqual(['old', 'new']);
  });
});

describe('DeadLetterFile options', () => {
  it('rejects invalid and unknown options with a ConfigError naming the field', async () => {
    const { path } = freshPath();
    const cases: [unknown, string][] = [
      [{ windowMs: -1 }, 'windowMs'],
      [{ maxLines: 0 }, 'maxLines'],
      [{ window: 5 }, 'window'],
    ];
    for (const [options, field] of cases) {
      const error = await rejection(DeadLetterFile.open(path, options as never));
      expect(error, field).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
    expect(((await rejection(DeadLetterFile.open(''))) as ConfigError).field).toBe('path');
  });
});
