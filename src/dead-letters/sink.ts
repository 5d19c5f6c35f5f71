/**
 * The `deadLetter` option made into a sink: a file opened to append, or the caller's own
 * `{ write(record, outcome) }` adapted to the same interface — so the ingestion drives one thing.
 */
import { ConfigError } from '../base/errors.js';
import { wallClock } from '../base/runtime.js';
import type { Clock } from '../base/types.js';
import { checkKnownKeys, checkObjectLike, duration, positiveInt } from '../base/validate.js';
import type { DurableFs } from '../sources/file-system.js';
import { type DeadLetter, ErrorInfoMemo } from './entry.js';
import { DeadLetterError } from './error.js';
import { DeadLetterFile } from './file.js';
import type {
  CustomDeadLetterSink,
  DeadLetterFileSpec,
  DeadLetterOption,
  DeadLetterSink,
} from './types.js';

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
 * Checks the `deadLetter` option at once (an ingestion checks its options before it starts):
 * `{ path, windowMs?, maxLines? }` or an object with `write(record, outcome)` (and an optional
 * `close()`). Anything else is a `ConfigError` naming `field` and what is wrong.
 */
export function checkDeadLetterOption(option: unknown, field = 'deadLetter'): DeadLetterOption {
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
    return option as CustomDeadLetterSink;
  }
  checkKnownKeys(field, o, FILE_KEYS);
  if (typeof o.path !== 'string' || o.path === '') {
    throw new ConfigError(`${field}.path`, 'must be a non-empty string (a file path)', o.path);
  }
  if (o.windowMs !== undefined) duration(`${field}.windowMs`, o.windowMs);
  if (o.maxLines !== undefined) positiveInt(`${field}.maxLines`, o.maxLines);
  return option as DeadLetterFileSpec;
}

/**
 * Checks the `deadLetter` option and opens its sink: a `{ path }` opens a
 * {@link DeadLetterFile} (rejecting with a `DeadLetterError` if it cannot be opened), an object
 * with `write` is adapted. Anything else rejects with a `ConfigError` naming the field.
 *
 * @example
 * const sink = await openDeadLetters({ path: 'failed.ndjson' }, { clock: balancerClock });
 * await sink.append({ record, error, outcome: 'failed' }); // the record has settled
 */
export async function openDeadLetters(
  option: unknown,
  context: DeadLetterContext = {},
): Promise<DeadLetterSink> {
  const checked = checkDeadLetterOption(option, context.field ?? 'deadLetter');
  if ('write' in checked && typeof checked.write === 'function') {
    return new CustomSink(checked as CustomDeadLetterSink, context.now ?? wallClock);
  }
  const spec = checked as DeadLetterFileSpec;
  return DeadLetterFile.open(spec.path, {
    windowMs: spec.windowMs,
    maxLines: spec.maxLines,
    clock: context.clock,
    now: context.now,
    fs: context.fs,
  });
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
