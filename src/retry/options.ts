import { ConfigError, isShardwiseError } from '../base/errors.js';
import {
  checkKnownKeys,
  checkObject,
  checkPlainObject,
  duration,
  fn,
  positiveInt,
} from '../base/validate.js';
import { type RetryBudgetOptions, resolveBudgetOptions } from './budget.js';

/** Retries of failed attempts on other shards. */
export interface RetryOptions {
  /** Total attempts per run, the first included (default 3). */
  attempts?: number;
  /** Exponential backoff with full jitter: a random wait in [0, min(maxMs, baseMs × 2^(n−1))). */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Retry budget, or `false` for none (default `{ ratio: 0.2, minPerSecond: 10, ttlMs: 10_000 }`). */
  budget?: RetryBudgetOptions | false;
  /** Which errors are worth another attempt (default {@link defaultRetryable}). */
  retryable?: (error: unknown) => boolean;
}

export interface ResolvedRetryOptions {
  attempts: number;
  baseMs: number;
  maxMs: number;
  budget: Required<RetryBudgetOptions> | false;
  retryable: (error: unknown) => boolean;
}

/**
 * The default classifier: every error is worth another shard unless it says otherwise
 * (`retryable: false`, as `HttpError` for a 4xx does) or it is the caller's own doing (a
 * missing key, a closed balancer, a picker bug).
 */
export function defaultRetryable(error: unknown): boolean {
  if (
    typeof error === 'object' &&
    error !== null &&
    (error as { retryable?: unknown }).retryable === false
  ) {
    return false;
  }
  return !(
    isShardwiseError(error, 'SHARDWISE_MISSING_KEY') ||
    isShardwiseError(error, 'SHARDWISE_CLOSED') ||
    isShardwiseError(error, 'SHARDWISE_PICKER') ||
    isShardwiseError(error, 'SHARDWISE_CONFIG')
  );
}

/** Error codes of a connection that never opened: the request cannot have reached the shard. */
export const CONNECT_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Causes read before giving up: far more than any real chain. */
const MAX_CAUSE_DEPTH = 32;

/**
 * True when the error proves the call never reached the shard (connection refused, no route,
 * push-back before work), so even a non-idempotent run may go elsewhere. Errors may also say so
 * with `notSent: true`.
 */
export function provesNotSent(error: unknown): boolean {
  // A loop, to a depth: a cause chain may cycle (a → b → a), and a getter may throw; either
  // would otherwise leave the run that failed unsettled.
  let current = error;
  try {
    for (let depth = 0; depth < MAX_CAUSE_DEPTH; depth++) {
      if (typeof current !== 'object' || current === null) return false;
      const notSent = (current as { notSent?: unknown }).notSent;
      if (notSent === true) return true;
      if (notSent === false) return false; // the error knows better than its causes
      const code = (current as { code?: unknown }).code;
      if (
        typeof code === 'string' &&
        (CONNECT_ERROR_CODES.has(code) || code === 'SHARDWISE_PUSH_BACK')
      ) {
        return true;
      }
      const cause: unknown = (current as { cause?: unknown }).cause;
      if (cause === current) return false;
      current = cause;
    }
  } catch {
    // An error whose properties throw proves nothing.
  }
  return false;
}

/** Full-jitter backoff (AWS architecture blog): uniform in [0, min(max, base × 2^(retry−1))). */
export function backoffDelay(
  retry: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  // Past 2^1023 the power is Infinity, and 0 × Infinity is NaN: a 0 base stays 0.
  const ceiling = baseMs === 0 ? 0 : Math.min(maxMs, baseMs * 2 ** Math.min(retry - 1, 1023));
  return random() * ceiling;
}

export const RETRY_DEFAULTS = { attempts: 3, baseMs: 50, maxMs: 2_000 };

export function resolveRetryOptions(
  value: RetryOptions | false | undefined,
): ResolvedRetryOptions | false {
  if (value === false) return false;
  const v = value === undefined ? {} : value;
  checkPlainObject('retry', v);
  checkKnownKeys('retry', v, ['attempts', 'backoff', 'budget', 'retryable']);
  const attempts =
    v.attempts === undefined ? RETRY_DEFAULTS.attempts : positiveInt('retry.attempts', v.attempts);
  let baseMs = RETRY_DEFAULTS.baseMs;
  let maxMs = RETRY_DEFAULTS.maxMs;
  if (v.backoff !== undefined) {
    checkObject('retry.backoff', v.backoff);
    checkKnownKeys('retry.backoff', v.backoff, ['baseMs', 'maxMs']);
    if (v.backoff.baseMs !== undefined) baseMs = duration('retry.backoff.baseMs', v.backoff.baseMs);
    if (v.backoff.maxMs !== undefined) maxMs = duration('retry.backoff.maxMs', v.backoff.maxMs);
    if (v.backoff.baseMs === undefined) baseMs = Math.min(baseMs, maxMs); // the default fits
    if (maxMs < baseMs) {
      throw new ConfigError(
        'retry.backoff.maxMs',
        `must be ≥ retry.backoff.baseMs (${baseMs})`,
        maxMs,
      );
    }
  }
  if (v.retryable !== undefined) fn('retry.retryable', v.retryable);
  return {
    attempts,
    baseMs,
    maxMs,
    budget: v.budget === false ? false : resolveBudgetOptions(v.budget),
    retryable: v.retryable ?? defaultRetryable,
  };
}
