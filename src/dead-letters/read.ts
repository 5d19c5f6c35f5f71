/**
 * Reading dead letters back, for a replay: the records as they were taken (a string, a `Buffer`
 * for bytes, an object), or the whole entries. A source like `readJsonl` (it is one underneath):
 * it reports positions, so a replay can checkpoint and resume too, and a line that is not a dead
 * letter leaves the position before it.
 */

import { checkKnownKeys, checkObject } from '../base/validate.js';
import type { Checkpoint } from '../sources/checkpoint.js';
import { readLines } from '../sources/jsonl.js';
import type { PositionedSource, SourcePosition } from '../sources/position.js';
import { type DeadLetterEntry, decodeLine } from './entry.js';

/** Options of {@link readDeadLetters}. */
export interface ReadDeadLettersOptions {
  /** `true`: yield whole entries `{ record, error, outcome, at }`; default: the records alone. */
  entries?: boolean;
  /** Resume after a position or a checkpoint, as `readJsonl`'s `from`. */
  from?: Partial<SourcePosition> | Checkpoint | undefined;
}

/** The async iterable {@link readDeadLetters} returns. */
export interface DeadLetterSource<T> extends AsyncIterable<T>, PositionedSource {
  readonly files: readonly string[];
  [Symbol.asyncIterator](): AsyncIterator<T> & PositionedSource;
}

/**
 * Reads one or many dead-letter files (a `.gz` one too) in order and yields each record as it was
 * dead-lettered — a string as a string, bytes as a `Buffer`, an object as an object — ready to
 * send again; with `entries: true`, each whole entry. A line that is not a dead letter stops it
 * with a `SourceError` naming the file and line.
 *
 * @example
 * await balancer.ingest(readDeadLetters('failed.ndjson'), { send }); // resend what failed
 * for await (const { record, error } of readDeadLetters('failed.ndjson', { entries: true })) {
 *   console.log(error.code, error.shard, record);
 * }
 */
export function readDeadLetters<Rec = unknown>(
  paths: string | readonly string[],
  options: ReadDeadLettersOptions & { entries: true },
): DeadLetterSource<DeadLetterEntry<Rec>>;
export function readDeadLetters<Rec = unknown>(
  paths: string | readonly string[],
  options?: ReadDeadLettersOptions & { entries?: false },
): DeadLetterSource<Rec>;
export function readDeadLetters(
  paths: string | readonly string[],
  options: ReadDeadLettersOptions = {},
): DeadLetterSource<unknown> {
  checkObject('options', options);
  checkKnownKeys('', options, ['entries', 'from']);
  const entries = options.entries === true;
  return readLines(paths, { parse: true, from: options.from }, (line) => {
    const entry = decodeLine(line);
    return entries ? entry : entry.record;
  });
}
