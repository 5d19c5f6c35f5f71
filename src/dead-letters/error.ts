/**
 * The error of the dead letters. Branded like every shardwise error, so `instanceof` and
 * `isShardwiseError` hold across two copies of the package.
 */
import { brand, hasCode, messageOf } from '../base/errors.js';
import { redactText } from '../base/redact.js';

/**
 * A dead letter could not be kept: the file could not be opened, written or `fsync`ed, a record
 * could not be encoded as JSON, or a custom sink's `write` threw. The record is not dropped: the
 * ingestion stops with this error (every record taken settles first), and every later `append`
 * to the same file rejects with it too — after a failed `fsync` nothing written since the last
 * good one can be trusted to be on the disk, so the file is not written again.
 *
 * @example
 * // DeadLetterError: dead letters failed.ndjson could not be written (ENOSPC: no space left on device)
 */
export class DeadLetterError extends Error {
  declare readonly code: 'SHARDWISE_DEAD_LETTER';
  /** The dead-letter file, or `undefined` for a custom sink. */
  readonly path: string | undefined;
  constructor(path: string | undefined, what: string, cause?: unknown) {
    const where = path === undefined ? 'the deadLetter sink' : `dead letters ${redactText(path)}`;
    super(
      `${where} ${what}${cause === undefined ? '' : ` (${redactText(messageOf(cause))})`}`,
      cause === undefined ? undefined : { cause },
    );
    brand(this, 'SHARDWISE_DEAD_LETTER', 'DeadLetterError');
    this.path = path;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_DEAD_LETTER');
  }
}
