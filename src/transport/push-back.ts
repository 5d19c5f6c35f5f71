/**
 * Push-back as both transports map it: a shard that says "too fast" (HTTP 429 or 503 with
 * `Retry-After`, S3 `SlowDown`) raises its own cost for the advised time instead of failing its
 * health. The advice is parsed (`Retry-After`: seconds or an HTTP-date), bounded by
 * `maxRetryAfterMs`, and turned into a `PushBackError` that names the shard, never a credential.
 */
import { PushBackError } from '../base/errors.js';
import { parseRetryAfter } from './retry-after.js';

/** How long to spare a shard: its `Retry-After`, or `fallbackMs` without a usable one. */
export interface PushBackAdvice {
  /** The `Retry-After` header value(s), if any. */
  retryAfter: string | string[] | undefined;
  /** Used when `retryAfter` is absent or malformed; undefined: no push-back without one. */
  fallbackMs: number | undefined;
  /** Cap on any advised wait, ms. */
  maxMs: number;
  /** The wall clock (epoch ms), for an HTTP-date. */
  wallClock: () => number;
}

/** The wait the shard asked for, capped; undefined when it gave none and there is no fallback. */
export function adviseMs(advice: PushBackAdvice): number | undefined {
  const ms = parseRetryAfter(advice.retryAfter, advice.wallClock) ?? advice.fallbackMs;
  return ms === undefined ? undefined : Math.min(ms, advice.maxMs);
}

/**
 * A `PushBackError` for `ms`, with the transport's plain fields (`statusCode`, `s3Code`)
 * enumerable on it and `cause` (already reduced by the caller) attached.
 */
export function pushBackError(
  ms: number,
  message: string,
  fields: Record<string, string | number | boolean | undefined>,
  cause?: unknown,
): PushBackError {
  const error = new PushBackError(ms, message, cause === undefined ? undefined : { cause });
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined) Object.defineProperty(error, name, { value, enumerable: true });
  }
  return error;
}
