/**
 * Typed errors. Each has a stable `code` and a brand that survives two copies of the package
 * (ESM and CJS builds loaded side by side): `instanceof` and the guards check the brand, not the
 * class identity.
 */

import { REDACTED, redactValue, safeValue, shapeOf } from './redact.js';

const BRAND = Symbol.for('shardwise.error');

export type ShardwiseErrorCode =
  | 'SHARDWISE_CONFIG'
  | 'SHARDWISE_NO_SHARD'
  | 'SHARDWISE_QUEUE_FULL'
  | 'SHARDWISE_TIMEOUT'
  | 'SHARDWISE_RETRIES_EXHAUSTED'
  | 'SHARDWISE_CLOSED'
  | 'SHARDWISE_MISSING_KEY'
  | 'SHARDWISE_PICKER'
  | 'SHARDWISE_PUSH_BACK'
  | 'SHARDWISE_SHARD_REMOVED'
  | 'SHARDWISE_SHARD_UNAVAILABLE'
  | 'SHARDWISE_UNCERTAIN'
  | 'SHARDWISE_RECORD_TOO_LARGE'
  | 'SHARDWISE_WRITE_FAILED'
  | 'SHARDWISE_INGEST_STOPPED'
  | 'SHARDWISE_SOURCE'
  | 'SHARDWISE_CHECKPOINT'
  | 'SHARDWISE_DEAD_LETTER'
  | 'SHARDWISE_HTTP'
  | 'SHARDWISE_S3';

/** Every error shardwise throws has these. */
export interface ShardwiseErrorLike extends Error {
  readonly code: ShardwiseErrorCode;
}

/**
 * Brands an error: its stable `code` (enumerable), its `name`, and the cross-copy brand that
 * `isShardwiseError` and every error class's `instanceof` check. Transports brand theirs with it.
 */
export function brand(error: Error, code: ShardwiseErrorCode, name: string): void {
  Object.defineProperty(error, BRAND, { value: code });
  Object.defineProperty(error, 'code', { value: code, enumerable: true });
  error.name = name;
}

/** True when `value` carries the brand `code` (from any copy of the package). */
export function hasCode(value: unknown, code: ShardwiseErrorCode): boolean {
  return typeof value === 'object' && value !== null && (value as any)[BRAND] === code;
}

/**
 * The class of the core's errors, by code: what `isShardwiseError(error, code)` narrows to. The
 * layers above (ingestion, transports) extend it with their own codes' classes.
 */
export interface CoreErrorClasses {
  SHARDWISE_CONFIG: ConfigError;
  SHARDWISE_NO_SHARD: NoShardAvailableError;
  SHARDWISE_QUEUE_FULL: QueueFullError;
  SHARDWISE_TIMEOUT: TimeoutError;
  SHARDWISE_RETRIES_EXHAUSTED: RetriesExhaustedError;
  SHARDWISE_CLOSED: BalancerClosedError;
  SHARDWISE_MISSING_KEY: MissingKeyError;
  SHARDWISE_PICKER: PickerError;
  SHARDWISE_PUSH_BACK: PushBackError;
  SHARDWISE_SHARD_REMOVED: ShardRemovedError;
  SHARDWISE_SHARD_UNAVAILABLE: ShardUnavailableError;
  SHARDWISE_UNCERTAIN: UncertainWriteError;
  SHARDWISE_RECORD_TOO_LARGE: RecordTooLargeError;
}

/** The class `Classes` gives `code`'s errors, or the shape every shardwise error has. */
export type ErrorOfCode<Classes, C extends ShardwiseErrorCode> = C extends keyof Classes
  ? Classes[C]
  : ShardwiseErrorLike & { readonly code: C };

/**
 * The type of `isShardwiseError`: given a code, it narrows to that code's class in `Classes` (as
 * `instanceof` that class would: both check the same brand).
 *
 * @example
 * if (isShardwiseError(error, 'SHARDWISE_INGEST_STOPPED')) console.log(error.summary.written);
 */
export interface ShardwiseErrorGuard<Classes> {
  <C extends ShardwiseErrorCode>(value: unknown, code: C): value is ErrorOfCode<Classes, C>;
  (value: unknown, code?: ShardwiseErrorCode): value is ShardwiseErrorLike;
}

/** The check behind every entry point's `isShardwiseError`, which each types with its classes. */
export function isBranded(value: unknown, code?: ShardwiseErrorCode): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const own = (value as any)[BRAND];
  return typeof own === 'string' && (code === undefined || own === code);
}

/**
 * True for any error thrown by shardwise (optionally of one `code`), from any copy of the
 * package. The brand of a code is set only by the constructor of that code's class, so the cast
 * says what the check proves.
 */
export const isShardwiseError = isBranded as ShardwiseErrorGuard<CoreErrorClasses>;

/**
 * Describes a value for an error message: `-1 (number)`, `"x" (string)`, `undefined`. Strings
 * lose URL credentials and query strings; objects are described by shape, never by content.
 */
export function describe(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (typeof value === 'string') return `${JSON.stringify(redactValue(value))} (string)`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${String(value)} (${typeof value})`;
  }
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  return shapeOf(value as object);
}

/**
 * An option or argument is invalid. A `TypeError`, with the field, the expectation and the value.
 *
 * @example
 * // ConfigError: `maxQueued` must be a positive integer, got -1 (number)
 */
export class ConfigError extends TypeError {
  declare readonly code: 'SHARDWISE_CONFIG';
  /** The option path, e.g. `retry.attempts`. */
  readonly field: string;
  /**
   * What was given, made safe to log: numbers and booleans as they are, strings without URL
   * credentials or query strings, objects as a description of their shape. With `secret`
   * (a header, a body), only `"[redacted]"`.
   */
  readonly value: unknown;

  /**
   * @param options.given false: the message does not say what was given.
   * @param options.secret the value may be a credential: neither the message nor `value` holds it.
   */
  constructor(
    field: string,
    expectation: string,
    value: unknown,
    options?: { given?: boolean; secret?: boolean },
  ) {
    const secret = options?.secret === true;
    super(
      options?.given === false
        ? `\`${field}\` ${expectation}`
        : `\`${field}\` ${expectation}, got ${secret ? secretShape(value) : describe(value)}`,
    );
    brand(this, 'SHARDWISE_CONFIG', 'ConfigError');
    this.field = field;
    this.value = secret ? REDACTED : safeValue(value);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_CONFIG');
  }
}

/**
 * `error` as found under `field` (an option nested in another: `balancerOptions.retry`,
 * `targets[0].client.maxSockets`), its expectation and what was given kept as they were said.
 */
export function renamedConfigError(error: ConfigError, field: string): ConfigError {
  const said = error.message.slice(error.field.length + 2).trimStart();
  const renamed = new ConfigError(field, said, undefined, { given: false });
  Object.defineProperty(renamed, 'value', { value: error.value, enumerable: true });
  return renamed;
}

/** The type and size of a value that may be a secret, never its content. */
function secretShape(value: unknown): string {
  if (typeof value === 'string') return `a string of length ${value.length}`;
  return describe(value);
}

/** No shard could take a run: all removed, none offered by the picker, or none matches a rule. */
export class NoShardAvailableError extends Error {
  declare readonly code: 'SHARDWISE_NO_SHARD';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'SHARDWISE_NO_SHARD', 'NoShardAvailableError');
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_NO_SHARD');
  }
}

/** `overflow: 'reject'` and `maxQueued` runs already wait. */
export class QueueFullError extends Error {
  declare readonly code: 'SHARDWISE_QUEUE_FULL';
  readonly maxQueued: number;
  /** @param ceiling set when the hard ceiling (10 × `maxQueued`) was hit, whatever `overflow` says. */
  constructor(maxQueued: number, ceiling?: number) {
    super(
      ceiling === undefined
        ? `the admission queue is full (maxQueued ${maxQueued}): await balancer.ready() before run(), or use overflow: 'wait'`
        : `the admission queue holds ${ceiling} runs, its hard ceiling (10 × maxQueued ${maxQueued}): await balancer.ready() before run() so memory stays bounded`,
    );
    brand(this, 'SHARDWISE_QUEUE_FULL', 'QueueFullError');
    this.maxQueued = maxQueued;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_QUEUE_FULL');
  }
}

/**
 * One attempt took longer than `timeoutMs` (its signal was aborted), or `drain({ timeoutMs })`
 * ran out before every run settled.
 */
export class TimeoutError extends Error {
  declare readonly code: 'SHARDWISE_TIMEOUT';
  readonly timeoutMs: number;
  readonly shardId: string | undefined;
  /** @param message replaces the default (`drain({ timeoutMs })` says what it waited for). */
  constructor(timeoutMs: number, shardId?: string, message?: string) {
    super(
      message ??
        `attempt timed out after ${timeoutMs} ms${shardId === undefined ? '' : ` on shard "${shardId}"`}`,
    );
    brand(this, 'SHARDWISE_TIMEOUT', 'TimeoutError');
    this.timeoutMs = timeoutMs;
    this.shardId = shardId;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_TIMEOUT');
  }
}

/** One failed attempt of a run. */
export interface AttemptRecord {
  shardId: string;
  error: unknown;
  /** Time from the run's admission to this attempt's end, ms (balancer clock). */
  elapsedMs: number;
}

/** A run failed after its retries (or could not be retried: attempts, budget, idempotency). */
export class RetriesExhaustedError extends Error {
  declare readonly code: 'SHARDWISE_RETRIES_EXHAUSTED';
  /** Every attempt, in order, with its shard and error. `cause` is the last error. */
  readonly attempts: AttemptRecord[];
  constructor(attempts: AttemptRecord[], reason: string) {
    const last = attempts[attempts.length - 1];
    const lastMessage = last === undefined ? 'no attempt' : messageOf(last.error);
    super(
      `run failed after ${attempts.length} attempt${attempts.length === 1 ? '' : 's'} (${reason}); last error on shard "${last?.shardId}": ${lastMessage}`,
      { cause: last?.error },
    );
    brand(this, 'SHARDWISE_RETRIES_EXHAUSTED', 'RetriesExhaustedError');
    this.attempts = attempts;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_RETRIES_EXHAUSTED');
  }
}

/** The balancer is closed: no run is admitted. */
export class BalancerClosedError extends Error {
  declare readonly code: 'SHARDWISE_CLOSED';
  constructor(message = 'the balancer is closed: no new run is admitted') {
    super(message);
    brand(this, 'SHARDWISE_CLOSED', 'BalancerClosedError');
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_CLOSED');
  }
}

/** A keyed picker (consistent hashing) got a run without a key, and has no `fallback`. */
export class MissingKeyError extends TypeError {
  declare readonly code: 'SHARDWISE_MISSING_KEY';
  constructor(pickerName: string) {
    super(
      `picker "${pickerName}" routes by key, and the run has none: pass run(fn, { key }) — for ingest() and createWriteStream(), a \`key\` option that gives every record its key — or build the picker with a \`fallback\` picker`,
    );
    brand(this, 'SHARDWISE_MISSING_KEY', 'MissingKeyError');
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_MISSING_KEY');
  }
}

/** A picker broke its contract: returned a shard it was not offered, or threw. */
export class PickerError extends Error {
  declare readonly code: 'SHARDWISE_PICKER';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'SHARDWISE_PICKER', 'PickerError');
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_PICKER');
  }
}

/**
 * A shard asked to slow down (HTTP 429, 503 with Retry-After, S3 `SlowDown`). Not a health
 * failure: the shard's cost rises for `retryAfterMs`, and a retry waits at least that long.
 */
export class PushBackError extends Error {
  declare readonly code: 'SHARDWISE_PUSH_BACK';
  /** How long the shard asked to be spared, ms: finite, ≥ 0, at most 365 days. */
  readonly retryAfterMs: number;
  constructor(retryAfterMs: number, message?: string, options?: { cause?: unknown }) {
    if (
      typeof retryAfterMs !== 'number' ||
      !Number.isFinite(retryAfterMs) ||
      retryAfterMs < 0 ||
      retryAfterMs > MAX_PUSH_BACK_MS
    ) {
      throw new ConfigError(
        'retryAfterMs',
        `must be a finite number of ms from 0 to ${MAX_PUSH_BACK_MS} (365 days)`,
        retryAfterMs,
      );
    }
    super(message ?? `the shard pushed back: retry after ${retryAfterMs} ms`, options);
    brand(this, 'SHARDWISE_PUSH_BACK', 'PushBackError');
    this.retryAfterMs = retryAfterMs;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_PUSH_BACK');
  }
}

/** The longest push-back a `PushBackError` may ask for (365 days, the longest option duration). */
const MAX_PUSH_BACK_MS = 365 * 24 * 3_600_000;

/** Why a run or a record waited for a shard that could not take it. */
export type UnavailableReason = 'ejected' | 'pushback' | 'capped' | 'unreachable' | 'down';

const UNAVAILABLE_WHAT: Record<UnavailableReason, string> = {
  ejected: 'was ejected',
  pushback: 'was pushing back',
  capped: 'was at its cap',
  unreachable: 'could not be reached',
  down: 'is down (unreachable for a whole delivery timeout, and no probe has succeeded since)',
};

/**
 * A run (or a record) waited for the one shard it may use — a keyed run's home under strict
 * affinity, or every shard its rule allows — while that shard was ejected, pushing back, at its
 * cap or unreachable, and its delivery deadline (`deliveryTimeoutMs`) passed: it was written
 * nowhere, as strict affinity promises (Kafka's producer fails a record the same way after its
 * `delivery.timeout.ms`). `reason` says what it waited on.
 */
export class ShardUnavailableError extends Error {
  declare readonly code: 'SHARDWISE_SHARD_UNAVAILABLE';
  /** The shard the run waited for. */
  readonly shardId: string;
  /** How long it waited, ms. */
  readonly waitedMs: number;
  /** What kept the shard from taking it. */
  readonly reason: UnavailableReason;
  /**
   * @param deliveryTimeoutMs the deadline that passed (named in the message), when one did.
   */
  constructor(
    shardId: string,
    waitedMs: number,
    reason: UnavailableReason,
    deliveryTimeoutMs?: number,
  ) {
    const waited =
      reason === 'down'
        ? ''
        : ` for ${Math.round(waitedMs)} ms${
            deliveryTimeoutMs === undefined
              ? ''
              : `, past its delivery deadline (deliveryTimeoutMs ${deliveryTimeoutMs})`
          }`;
    super(
      `shard "${shardId}" ${UNAVAILABLE_WHAT[reason]}${waited}; a keyed run (strict affinity) or a rule that allows no other shard sends it nowhere else — raise deliveryTimeoutMs to wait longer, or use consistentHash({ affinity: 'spill' }) to let keys move`,
    );
    brand(this, 'SHARDWISE_SHARD_UNAVAILABLE', 'ShardUnavailableError');
    this.shardId = shardId;
    this.waitedMs = waitedMs;
    this.reason = reason;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_SHARD_UNAVAILABLE');
  }
}

/**
 * A write whose outcome is unknown: it was sent, and no answer came (a timeout, or a connection
 * reset after the body went out). The shard may have stored it — or not. `uncertain` is `true`;
 * `cause` is the last attempt's error. An ingestion reports such records apart from the failed
 * ones (`summary.uncertain`, `onUncertain`): re-sending them may store them twice, which a
 * deduplicating server (the batch's `Idempotency-Key`) absorbs.
 */
export class UncertainWriteError extends Error {
  declare readonly code: 'SHARDWISE_UNCERTAIN';
  readonly uncertain = true as const;
  /** The shard the last uncertain send went to. */
  readonly shardId: string;
  constructor(shardId: string, cause: unknown) {
    super(
      `sent to shard "${shardId}" and no answer came (${messageOf(cause)}): it may or may not be stored`,
      { cause },
    );
    brand(this, 'SHARDWISE_UNCERTAIN', 'UncertainWriteError');
    this.shardId = shardId;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_UNCERTAIN');
  }
}

/**
 * A record too large for the shard: it was refused (HTTP 413) alone in its batch, so no split
 * can make it fit. `bytes` is its size as sent.
 */
export class RecordTooLargeError extends Error {
  declare readonly code: 'SHARDWISE_RECORD_TOO_LARGE';
  readonly shardId: string;
  readonly bytes: number;
  constructor(shardId: string, bytes: number, cause: unknown) {
    super(
      `shard "${shardId}" refused a record of ${bytes} bytes alone as too large (${messageOf(cause)}): it cannot be split further`,
      { cause },
    );
    brand(this, 'SHARDWISE_RECORD_TOO_LARGE', 'RecordTooLargeError');
    this.shardId = shardId;
    this.bytes = bytes;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_RECORD_TOO_LARGE');
  }
}

/** The shard an attempt ran on was removed without drain; the attempt was aborted. */
export class ShardRemovedError extends Error {
  declare readonly code: 'SHARDWISE_SHARD_REMOVED';
  readonly shardId: string;
  constructor(shardId: string) {
    super(`shard "${shardId}" was removed while the attempt ran`);
    brand(this, 'SHARDWISE_SHARD_REMOVED', 'ShardRemovedError');
    this.shardId = shardId;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_SHARD_REMOVED');
  }
}

/** A readable message for any thrown value. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
