import { CONNECT_ERROR_CODES } from '../retry/options.js';
import { adviseMs, pushBackError } from '../transport/push-back.js';
import { HttpError, pathWithoutQuery } from './errors.js';

/** Where a status is being judged. */
export interface ExchangeInfo {
  shardId: string;
  method: string;
  path: string;
  maxRetryAfterMs: number;
  defaultRetryAfterMs: number;
  wallClock: () => number;
  /** The request's secret values, scrubbed from any excerpt of the response. */
  secrets: readonly string[];
  /** The request's one-shot stream body was read: a push-back cannot be retried elsewhere. */
  streamSent?: boolean;
}

/**
 * The error a status means, or undefined for success (< 400: 2xx, and 1xx/3xx, which undici
 * hands over as they are; no redirect is followed).
 *
 * - 429, and 503 with a usable `Retry-After` → `PushBackError` (load, not ill health: the shard's
 *   cost rises for the advised time, capped at `maxRetryAfterMs`; a 429 without one holds 1 s);
 *   final (`notSent: false`) when a one-shot stream body was read, as nothing is left to resend;
 * - other 5xx → `HttpError`, `retryable: true`;
 * - 4xx → `HttpError`, `retryable: false`.
 */
export function statusError(
  statusCode: number,
  headers: Record<string, string | string[] | undefined>,
  body: Uint8Array,
  info: ExchangeInfo,
): Error | undefined {
  if (statusCode < 400) return undefined;
  if (statusCode === 429 || statusCode === 503) {
    const ms = adviseMs({
      retryAfter: headers['retry-after'],
      fallbackMs: statusCode === 429 ? info.defaultRetryAfterMs : undefined,
      maxMs: info.maxRetryAfterMs,
      wallClock: info.wallClock,
    });
    if (ms !== undefined) {
      const answered = `shard "${info.shardId}" answered ${info.method} ${pathWithoutQuery(info.path)} with HTTP ${statusCode}: retry after ${ms} ms`;
      if (info.streamSent !== true) return pushBackError(ms, answered, { statusCode });
      // The shard is still spared for `ms`; the run is not retried, as its body is gone.
      return pushBackError(
        ms,
        `${answered}; the request's one-shot stream body was read, so it is not retried: pass a function returning a fresh body to make it replayable`,
        { statusCode, notSent: false },
      );
    }
  }
  return new HttpError({
    statusCode,
    shardId: info.shardId,
    method: info.method,
    path: info.path,
    body,
    retryable: statusCode >= 500,
    secrets: info.secrets,
  });
}

/**
 * Marks a transport error for the retry classifier: `notSent: true` where its code proves the
 * request never reached the shard (so even a non-idempotent run may go elsewhere), and
 * `retryable: false` for an invalid request (undici's `UND_ERR_INVALID_ARG`, or a body that
 * does not match the caller's own `content-length`: every shard would refuse it, and it is no
 * fault of the shard's). Returns the same error.
 */
export function annotateTransportError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null || !Object.isExtensible(error)) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  // A connection that never opened, or a request undici refused to send, never left.
  const notSent = CONNECT_ERROR_CODES.has(code) || code === 'UND_ERR_INVALID_ARG';
  if (notSent && (error as { notSent?: unknown }).notSent === undefined) {
    Object.defineProperty(error, 'notSent', { value: true, enumerable: true, configurable: true });
  }
  if (
    (code === 'UND_ERR_INVALID_ARG' || code === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH') &&
    (error as { retryable?: unknown }).retryable === undefined
  ) {
    Object.defineProperty(error, 'retryable', {
      value: false,
      enumerable: true,
      configurable: true,
    });
  }
  return error;
}
