/**
 * The errors of record ingestion. Branded like every shardwise error (`Symbol.for('shardwise.error')`),
 * so `instanceof` and `isShardwiseError` hold across two copies of the package.
 */
import { brand, hasCode, messageOf } from '../base/errors.js';
import type { IngestSummary } from './types.js';

/** A record failed after its retries; the write stream errors with it. */
export class WriteFailedError extends Error {
  declare readonly code: 'SHARDWISE_WRITE_FAILED';
  readonly record: unknown;
  constructor(record: unknown, cause: unknown, message?: string) {
    super(message ?? `a record failed to be written: ${messageOf(cause)}`, { cause });
    brand(this, 'SHARDWISE_WRITE_FAILED', 'WriteFailedError');
    this.record = record;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_WRITE_FAILED');
  }
}

/** Why an ingestion stopped before the end of its source. */
export type IngestStop = 'aborted' | 'source' | 'closed' | 'callback' | 'deadLetter' | 'checkpoint';

const WHY: Record<IngestStop, string> = {
  aborted: 'its signal aborted',
  source: 'the source threw',
  closed: 'the balancer was closed',
  callback: 'an onFailed, onUncertain, onProgress or onCheckpoint callback threw',
  deadLetter: 'a dead letter could not be kept',
  checkpoint: 'a checkpoint could not be saved',
};

/**
 * An ingestion stopped before the end of its source: its signal aborted (`cause`: the abort
 * reason), the source threw (`cause`: its error), the balancer was closed (`cause`: a
 * `BalancerClosedError`), a callback threw (`cause`: its error), a dead letter could not be kept
 * (`cause`: a `DeadLetterError`) or a checkpoint could not be saved (`cause`: a
 * `CheckpointError`). Thrown only once every record
 * taken has settled, so `summary` is final: each record taken is in `written` or `failures`.
 *
 * @example
 * try {
 *   await balancer.ingest(records, { send, signal });
 * } catch (error) {
 *   if (error instanceof IngestError) console.log(error.kind, error.summary.written, error.summary.failures);
 * }
 */
export class IngestError<Rec = unknown> extends Error {
  declare readonly code: 'SHARDWISE_INGEST_STOPPED';
  readonly kind: IngestStop;
  readonly summary: IngestSummary<Rec>;
  constructor(kind: IngestStop, cause: unknown, summary: IngestSummary<Rec>) {
    super(
      `ingest stopped before the end of its source: ${WHY[kind]} (${messageOf(cause)}); ` +
        `${summary.written} record(s) written, ${summary.failed} failed`,
      { cause },
    );
    brand(this, 'SHARDWISE_INGEST_STOPPED', 'IngestError');
    this.kind = kind;
    this.summary = summary;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_INGEST_STOPPED');
  }
}
