/**
 * What a failed send says about its records. A record ends `written`, `failed` — known not stored:
 * never sent, or refused with a definitive answer — or `uncertain`: sent, and no answer came (a
 * timeout, a connection reset after the body went out), so the shard may hold it or not. A
 * refused batch is also told apart: its data was rejected (split it to find the records at
 * fault), or it was too large (split it at once, spending no attempt).
 */
import { PushBackError, RetriesExhaustedError, TimeoutError } from '../base/errors.js';
import { provesNotSent } from '../retry/options.js';

/** How a failed send is read. */
export type SendFailure = 'uncertain' | 'rejected' | 'tooLarge' | 'failed';

/**
 * Error codes of a connection that broke after the request may have gone out: the shard may have
 * stored what it got.
 */
const BROKEN_AFTER_SEND = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Statuses that say the batch's data was refused (not the request's form, not the shard's
 * state): 400 Bad Request and 422 Unprocessable Content. Splitting such a batch finds the records
 * at fault; splitting one refused for a missing credential (401, 403) or a wrong path (404) would
 * only multiply the refusals.
 */
const REJECTING_STATUSES = new Set([400, 422]);

/**
 * Reads a failed send's error. An error may say it itself: `uncertain: true`, `rejected: true`
 * (its data was refused), `notSent: true` (never left). Otherwise: push-back and errors that
 * prove the request never left are `failed` (not stored); a timeout, a connection broken after
 * the request left, an HTTP 504 (a gateway gave up on the shard) are `uncertain`; 413 is
 * `tooLarge`; 400 and 422 are `rejected`; any other answer is `failed`.
 */
export function readFailure(error: unknown): SendFailure {
  if (typeof error !== 'object' || error === null) return 'failed';
  const e = error as {
    uncertain?: unknown;
    rejected?: unknown;
    statusCode?: unknown;
    code?: unknown;
    cause?: unknown;
  };
  if (e.uncertain === true) return 'uncertain';
  if (e.rejected === true) return 'rejected';
  if (error instanceof PushBackError || provesNotSent(error)) return 'failed';
  if (error instanceof TimeoutError) return 'uncertain';
  const status = e.statusCode;
  if (typeof status === 'number') {
    if (status === 413) return 'tooLarge';
    if (status === 504) return 'uncertain';
    return REJECTING_STATUSES.has(status) ? 'rejected' : 'failed';
  }
  if (typeof e.code === 'string' && BROKEN_AFTER_SEND.has(e.code)) return 'uncertain';
  // undici wraps a socket's error; an AbortError of an attempt the balancer ended has no code.
  const cause = e.cause as { code?: unknown } | undefined;
  if (typeof cause?.code === 'string' && BROKEN_AFTER_SEND.has(cause.code)) return 'uncertain';
  return 'failed';
}

/** The last attempt's error behind a run's final error (a `RetriesExhaustedError` lists them). */
export function lastError(error: unknown): unknown {
  if (error instanceof RetriesExhaustedError) {
    const attempts = error.attempts;
    return attempts.length === 0 ? error : attempts[attempts.length - 1]!.error;
  }
  return error;
}

/** The shard a failed send's error names, if it names one. */
export function shardOf(error: unknown): string | undefined {
  const id = (error as { shardId?: unknown } | null)?.shardId;
  return typeof id === 'string' ? id : undefined;
}
