/**
 * The errors of file sources and checkpoints. Branded like every shardwise error, so `instanceof`
 * and `isShardwiseError` hold across two copies of the package.
 */
import { brand, hasCode, messageOf } from '../base/errors.js';
import { redactText } from '../base/redact.js';

/**
 * A source could not give its next record: a file could not be opened or read, a `.gz` file is
 * corrupt, a line is longer than `maxLineBytes`, or (with `parse: true`) a line is not JSON.
 * Names the file and the line. Thrown by the source's `next()`: `ingest` stops as it does for any
 * source that throws (`IngestError` with `kind: 'source'`, this error as its `cause`) once every
 * record taken has settled, and a checkpoint taken then resumes just before the bad line.
 *
 * @example
 * // SourceError: data/part-3.jsonl:1207: not valid JSON (at character 18)
 */
export class SourceError extends Error {
  declare readonly code: 'SHARDWISE_SOURCE';
  /** The file, as it was given. */
  readonly file: string;
  /** The 1-based line the error is about (0: before the first line, e.g. the file did not open). */
  readonly line: number;
  /**
   * @param what what went wrong, said without the line's content (a record may hold secrets).
   * @param cause a system or zlib error; never an error that quotes the line.
   */
  constructor(file: string, line: number, what: string, cause?: unknown) {
    super(
      `${redactText(file)}${line > 0 ? `:${line}` : ''}: ${what}${cause === undefined ? '' : ` (${messageOf(cause)})`}`,
      cause === undefined ? undefined : { cause },
    );
    brand(this, 'SHARDWISE_SOURCE', 'SourceError');
    this.file = file;
    this.line = line;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_SOURCE');
  }
}

/**
 * A checkpoint file could not be read (it is not a checkpoint: corrupt, cut short, another
 * version) or could not be saved. Names the file; the previous checkpoint, if any, is untouched.
 *
 * @example
 * // CheckpointError: checkpoint load.ckpt is corrupt: not JSON; delete it to start over
 */
export class CheckpointError extends Error {
  declare readonly code: 'SHARDWISE_CHECKPOINT';
  /** The checkpoint file. */
  readonly path: string;
  constructor(path: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    brand(this, 'SHARDWISE_CHECKPOINT', 'CheckpointError');
    this.path = path;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_CHECKPOINT');
  }
}
