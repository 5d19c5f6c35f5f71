/**
 * The `deadLetter` option made into a sink: a file opened to append, or the caller's own
 * `{ write(record, outcome) }` adapted to the same interface — so the ingestion drives one thing.
 */
import { ConfigError, renamedConfigError } from '../errors.js';
import { wallClock } from '../runtime.js';
import type { DurableFs } from '../sources/file-system.js';
import type { Clock } from '../types.js';
import { checkKnownKeys, checkObjectLike } from '../validate.js';
import { type DeadLetter, ErrorInfoMemo } from './entry.js';
import { DeadLetterError } from './error.js';
import { DeadLetterFile } from './file.js';
import type { CustomDeadLetterSink, DeadLetterSink } from './types.js';

/** What the ingestion lends the sink: its clock (for the file's window) and the wall clock. */
export interface DeadLetterContext {
  /** The option's name in messages (default `deadLetter`). */
  field?: string;
  clock?: Clock;
  now?: () => number;
  fs?: DurableFs;
}

const FILE_KEYS = ['path', 'windowMs', 'maxLines'] as const;

/**
 * Checks the `deadLetter` option and opens its sink: `{ path, windowMs?, maxLines? }` opens a
 * {@link DeadLetterFile} (rejecting with a `DeadLetterError` if it cannot be opened), an object
 * with `write` is adapted. Anything else is a `ConfigError` naming the field.
 *
 * @example
 * const sink = await openDeadLetters({ path: 'failed.ndjson' }, { clock: balancerClock });
 * await sink.append({ record, error, outcome: 'failed' }); // the record has settled
 */
export async function openDeadLetters(
  option: unknown,
  context: DeadLetterContext = {},
): Promise<DeadLetterSink> {
  const field = context.field ?? 'deadLetter';
  checkObjectLike(field, option);
  const o = option as Record<string, unknown>;
  if (o.write !== undefined || o.path === undefined) {
    if (typeof o.write !== 'function') {
      throw new ConfigError(
        field,
        'must be { path } (a dead-letter file) or an object with write(record, outcome)',
        option,
      );
    }
    if (o.path !== undefined) {
      throw new ConfigError(`${field}.path`, 'must not be given beside write()', o.path);
    }
    if (o.close !== undefined && typeof o.close !== 'function') {
      throw new ConfigError(`${field}.close`, 'must be a function', o.close);
    }
    return new CustomSink(option as CustomDeadLetterSink, context.now ?? wallClock);
  }
  checkKnownKeys(field, o, FILE_KEYS);
  if (typeof o.path !== 'string' || o.path === '') {
    throw new ConfigError(`${field}.path`, 'must be a non-empty string (a file path)', o.path);
  }
  try {
    return await DeadLetterFile.open(o.path, {
      windowMs: o.windowMs as number | undefined,
      maxLines: o.maxLines as number | undefined,
      clock: context.clock,
      now: context.now,
      fs: context.fs,
    });
  } catch (error) {
    if (error instanceof ConfigError) throw renamedConfigError(error, `${field}.${error.field}`);
    throw error;
  }
}

/** The caller's `write(record, outcome)` behind the sink interface. */
class CustomSink implements DeadLetterSink {
  private readonly errors = new ErrorInfoMemo();
  constructor(
    private readonly sink: CustomDeadLetterSink,
    private readonly now: () => number,
  ) {}

  async append(letter: DeadLetter): Promise<void> {
    const outcome = {
      outcome: letter.outcome,
      error: { ...this.errors.of(letter) },
      at: new Date(this.now()).toISOString(),
    };
    try {
      await this.sink.write(letter.record, outcome);
    } catch (error) {
      throw new DeadLetterError(undefined, 'write(record, outcome) failed', error);
    }
  }

  async close(): Promise<void> {
    try {
      await this.sink.close?.();
    } catch (error) {
      throw new DeadLetterError(undefined, 'close() failed', error);
    }
  }
}
