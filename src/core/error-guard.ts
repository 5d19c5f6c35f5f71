/**
 * `isShardwiseError` as the package exports it: the core's guard (the same function), typed with
 * the class of every code the core and its ingestion throw, so that
 * `isShardwiseError(error, 'SHARDWISE_INGEST_STOPPED')` narrows `error` to an `IngestError`.
 * It lives here, above both: `errors.ts` is below the ingestion and cannot name its classes.
 */
import { type CoreErrorClasses, isBranded, type ShardwiseErrorGuard } from '../base/errors.js';
import type { IngestError, WriteFailedError } from '../ingest/errors.js';

/** The class of each code's errors, core and ingestion: what `isShardwiseError` narrows to. */
export interface ShardwiseErrorClasses extends CoreErrorClasses {
  SHARDWISE_WRITE_FAILED: WriteFailedError;
  SHARDWISE_INGEST_STOPPED: IngestError;
}

/**
 * True for any error thrown by shardwise (optionally of one `code`), from any copy of the
 * package; with a code, it narrows to that code's class.
 *
 * @example
 * try {
 *   await balancer.ingest(records, { send, signal });
 * } catch (error) {
 *   if (isShardwiseError(error, 'SHARDWISE_INGEST_STOPPED')) console.log(error.kind, error.summary);
 * }
 */
export const isShardwiseError = isBranded as ShardwiseErrorGuard<ShardwiseErrorClasses>;
