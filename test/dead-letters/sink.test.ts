/**
 * The `deadLetter` option as one sink: `{ path }` opens a file, `{ write(record, outcome) }` is
 * adapted — it gets the record as taken and the line's other fields (the error redacted), the
 * record settles when its write settles, and a throwing write is a DeadLetterError.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDeadLetterOption, openDeadLetters } from '../../src/dead-letters/sink.js';
import { ConfigError } from '../../src/index.js';
import {
  DeadLetterError,
  DeadLetterFile,
  type DeadLetterOutcome,
} from '../../src/sources/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { flush } from '../helpers.js';
import { tempDir } from '../sources/files.js';

const root = tempDir('dead-letter-sink');
const AT = Date.parse('2025-03-04T05:06:07.089Z');

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('openDeadLetters', () => {
  it('{ path } opens a dead-letter file on the clock it is lent', async () => {
    const dir = join(root, 'file');
    mkdirSync(dir);
    const clock = new ManualClock();
    const sink = await openDeadLetters({ path: join(dir, 'f.ndjson'), windowMs: 20 }, { clock });
    expect(sink).toBeInstanceOf(DeadLetterFile);
    let done = false;
    const appended = sink.append({ record: 1, error: 'x', outcome: 'failed' }).then(() => {
      done = true;
    });
    await flush();
    expect(done).toBe(false);
    clock.advance(20);
    await appended;
    await sink.close();
  });

  it('a custom sink gets the record as taken and the outcome as a file line holds it', async () => {
    const got: [unknown, DeadLetterOutcome][] = [];
    let closed = 0;
    const sink = await openDeadLetters(
      {
        write: (record: unknown, outcome: DeadLetterOutcome) => {
          got.push([record, outcome]);
        },
        close: () => {
          closed++;
        },
      },
      { now: () => AT },
    );
    const record = { id: 7 };
    const error = new Error('POST http://u:secret-pw@h:1/x?token=qs-secret failed');
    await sink.append({ record, error, outcome: 'uncertain', shard: 'b', attempts: 3 });
    expect(got).toHaveLength(1);
    expect(got[0]![0]).toBe(record);
    expect(got[0]![1]).toEqual({
      outcome: 'uncertain',
      error: {
        code: 'Error',
        message: 'POST http://h:1/x?[redacted] failed',
        shard: 'b',
        attempts: 3,
      },
      at: '2025-03-04T05:06:07.089Z',
    });
    await sink.close();
    expect(closed).toBe(1);
  });

  it('a record settles when its custom write settles; a throwing write is a DeadLetterError', async () => {
    let finish!: () => void;
    const sink = await openDeadLetters({
      write: (record: unknown) => {
        if (record === 'bad') throw new Error('queue unavailable');
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
    });
    let done = false;
    const appended = sink.append({ record: 'ok', error: 'x', outcome: 'failed' }).then(() => {
      done = true;
    });
    await flush();
    expect(done).toBe(false);
    finish();
    await appended;
    const error = await rejection(sink.append({ record: 'bad', error: 'x', outcome: 'failed' }));
    expect(error).toBeInstanceOf(DeadLetterError);
    expect((error as DeadLetterError).path).toBeUndefined();
    expect((error as Error).message).toContain('queue unavailable');
    expect(((error as Error).cause as Error).message).toBe('queue unavailable');
  });

  it('an option that is neither: a ConfigError naming deadLetter and the field', async () => {
    const cases: [unknown, string][] = [
      ['failed.ndjson', 'deadLetter'],
      [{ pth: 'x' }, 'deadLetter'],
      [{ write: 'x' }, 'deadLetter'],
      [{ path: 'x', write: () => {} }, 'deadLetter.path'],
      [{ write: () => {}, close: 1 }, 'deadLetter.close'],
      [{ path: '' }, 'deadLetter.path'],
      [{ path: 'x', windowMs: -1 }, 'deadLetter.windowMs'],
      [{ path: 'x', fsync: true }, 'deadLetter.fsync'],
    ];
    for (const [option, field] of cases) {
      // At once (an ingestion checks its options before it starts), and when opening.
      expect(() => checkDeadLetterOption(option), field).toThrow(ConfigError);
      const error = await rejection(openDeadLetters(option));
      expect(error, field).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
  });
});
