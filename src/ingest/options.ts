/**
 * Checks of the options of `ingest`, `createWriteStream` and their batching, once, before any
 * record is taken: each problem is a `ConfigError` naming the field, the expectation and the value.
 */
import { ConfigError } from '../base/errors.js';
import type { Picker } from '../base/types.js';
import {
  bool,
  checkKnownKeys,
  checkObject,
  duration,
  fn,
  nonNegativeInt,
  oneOf,
  orDefault,
  positiveInt,
} from '../base/validate.js';
import { BUDGET_DEFAULTS, type RetryBudgetOptions, resolveBudgetOptions } from '../retry/budget.js';
import { RETRY_DEFAULTS, type ResolvedRetryOptions, type RetryOptions } from '../retry/options.js';
import type {
  BatchOptions,
  BatchSendFn,
  CommonRecordOptions,
  RecordRetryOptions,
  SendFn,
} from './types.js';

const MiB = 1024 * 1024;

/** Batching defaults (transports may start from their own). */
export const BATCH_DEFAULTS = {
  maxRecords: 500,
  maxBytes: MiB,
  lingerMs: 50,
  /** The least default of `maxHeldRecords` (it is at least 2 × `maxRecords`). */
  maxHeldRecords: 100_000,
  /** The least default of `maxHeldBytes` (it is at least 2 × `maxBytes`). */
  maxHeldBytes: 256 * MiB,
} as const;

/** The batching defaults a transport starts from. */
export interface BatchDefaults {
  maxRecords: number;
  maxBytes: number;
  lingerMs: number;
}

/** A record's retry rule after a partial failure. */
export interface ResolvedRecordRetry {
  attempts: number;
  baseMs: number;
  maxMs: number;
  budget: Required<RetryBudgetOptions> | false;
}

export interface ResolvedBatch<Rec> {
  maxRecords: number;
  maxBytes: number;
  lingerMs: number;
  size: ((record: Rec) => number) | undefined;
  maxHeldRecords: number;
  maxHeldBytes: number;
  /** `batch.retry` as given (checked); undefined: the balancer's `retry`. */
  retry: ResolvedRecordRetry | false | undefined;
  keepRecords: boolean;
}

export interface ResolvedRecordOptions<T, Rec> {
  key: ((record: Rec) => unknown) | undefined;
  bytes: ((record: Rec) => number) | undefined;
  idempotent: boolean;
  onFailed: ((record: Rec, error: unknown) => void) | undefined;
  onUncertain: ((record: Rec, error: unknown) => void) | undefined;
  /** The ingestion's own `deliveryTimeoutMs`; undefined: the balancer's. */
  deliveryTimeoutMs: number | undefined;
  /** `ordering: 'key'`. */
  ordered: boolean;
  /** Failed records `summary.failures` keeps. */
  keepFailures: number;
  /** One record per run (without `batch`). */
  send: SendFn<T, Rec> | undefined;
  /** One batch per run (with `batch`). */
  sendBatch: BatchSendFn<T, Rec> | undefined;
  batch: ResolvedBatch<Rec> | undefined;
}

/** The option names every record ingestion takes (the transports' lists include them). */
export const COMMON_KEYS = [
  'key',
  'bytes',
  'idempotent',
  'onFailed',
  'onUncertain',
  'keepFailures',
  'deliveryTimeoutMs',
  'ordering',
];

/** Failed records a summary keeps by default: ~100 MB at worst for records of a KiB. */
export const DEFAULT_KEEP_FAILURES = 100_000;

/**
 * Checks the options every record ingestion shares (`key`, `bytes`, `idempotent`, `onFailed`,
 * `onUncertain`, `keepFailures`, `deliveryTimeoutMs`, `ordering`).
 */
export function checkCommon<Rec>(
  field: string,
  o: CommonRecordOptions<Rec>,
): Pick<
  ResolvedRecordOptions<unknown, Rec>,
  | 'key'
  | 'bytes'
  | 'idempotent'
  | 'onFailed'
  | 'onUncertain'
  | 'keepFailures'
  | 'deliveryTimeoutMs'
  | 'ordered'
> {
  if (o.key !== undefined) fn(`${field}.key`, o.key);
  if (o.bytes !== undefined) fn(`${field}.bytes`, o.bytes);
  if (o.onFailed !== undefined) fn(`${field}.onFailed`, o.onFailed);
  if (o.onUncertain !== undefined) fn(`${field}.onUncertain`, o.onUncertain);
  const ordering =
    o.ordering === undefined ? 'none' : oneOf(`${field}.ordering`, o.ordering, ['key', 'none']);
  if (ordering === 'key' && o.key === undefined) {
    throw new ConfigError(
      `${field}.ordering`,
      "can be 'key' only with a `key` option (the order kept is each key's)",
      ordering,
    );
  }
  return {
    key: o.key,
    bytes: o.bytes,
    idempotent: o.idempotent === undefined ? true : bool(`${field}.idempotent`, o.idempotent),
    onFailed: o.onFailed,
    onUncertain: o.onUncertain,
    deliveryTimeoutMs:
      o.deliveryTimeoutMs === undefined || o.deliveryTimeoutMs === Number.POSITIVE_INFINITY
        ? o.deliveryTimeoutMs
        : duration(`${field}.deliveryTimeoutMs`, o.deliveryTimeoutMs, true),
    ordered: ordering === 'key',
    keepFailures: orDefault(o.keepFailures, DEFAULT_KEEP_FAILURES, (v) =>
      nonNegativeInt(`${field}.keepFailures`, v, true),
    ),
  };
}

/** Checks the options of `createWriteStream` / `ingest` (`extra`: the option names ingest adds). */
export function checkRecordOptions<T, Rec>(
  field: string,
  options: unknown,
  extra: readonly string[] = [],
): ResolvedRecordOptions<T, Rec> {
  checkObject(field, options);
  checkKnownKeys(field, options, ['send', 'batch', ...COMMON_KEYS, ...extra]);
  const o = options as CommonRecordOptions<Rec> & { send?: unknown; batch?: unknown };
  fn(`${field}.send`, o.send);
  const common = checkCommon(field, o);
  const batch =
    o.batch === undefined
      ? undefined
      : resolveBatch<Rec>(`${field}.batch`, o.batch, BATCH_DEFAULTS, o.bytes);
  if (batch !== undefined) {
    checkKeepsRecords(field, batch as ResolvedBatch<unknown>, '`send` is given the records');
  }
  return {
    ...common,
    send: batch === undefined ? (o.send as SendFn<T, Rec>) : undefined,
    sendBatch: batch === undefined ? undefined : (o.send as BatchSendFn<T, Rec>),
    batch,
  };
}

const BATCH_KEYS = [
  'keepRecords',
  'maxRecords',
  'maxBytes',
  'lingerMs',
  'size',
  'maxHeldRecords',
  'maxHeldBytes',
  'retry',
];

/**
 * Checks `batch` options against `defaults`. `bytes` (the record option) is `size`'s default
 * when given.
 */
export function resolveBatch<Rec>(
  field: string,
  value: unknown,
  defaults: BatchDefaults,
  bytes?: (record: Rec) => number,
): ResolvedBatch<Rec> {
  checkObject(field, value);
  checkKnownKeys(field, value, BATCH_KEYS);
  const b = value as BatchOptions<Rec>;
  let maxRecords =
    b.maxRecords === undefined
      ? defaults.maxRecords
      : positiveInt(`${field}.maxRecords`, b.maxRecords);
  let maxBytes =
    b.maxBytes === undefined
      ? defaults.maxBytes
      : positiveInt(`${field}.maxBytes`, b.maxBytes, true);
  const lingerMs =
    b.lingerMs === undefined ? defaults.lingerMs : duration(`${field}.lingerMs`, b.lingerMs);
  if (b.size !== undefined) fn(`${field}.size`, b.size);
  const maxHeldRecords =
    b.maxHeldRecords === undefined
      ? Math.max(BATCH_DEFAULTS.maxHeldRecords, 2 * maxRecords)
      : positiveInt(`${field}.maxHeldRecords`, b.maxHeldRecords);
  // A default fits itself under the bound the caller gave (as `aimd`'s default initial does).
  if (b.maxRecords === undefined) maxRecords = Math.min(maxRecords, maxHeldRecords);
  if (maxHeldRecords < maxRecords) {
    throw new ConfigError(
      `${field}.maxHeldRecords`,
      `must be at least maxRecords (${maxRecords}), or no batch could fill`,
      maxHeldRecords,
    );
  }
  const maxHeldBytes =
    b.maxHeldBytes === undefined
      ? Math.max(BATCH_DEFAULTS.maxHeldBytes, 2 * maxBytes)
      : positiveInt(`${field}.maxHeldBytes`, b.maxHeldBytes, true);
  if (b.maxBytes === undefined) maxBytes = Math.min(maxBytes, maxHeldBytes);
  if (maxHeldBytes < maxBytes) {
    throw new ConfigError(
      `${field}.maxHeldBytes`,
      `must be at least maxBytes (${maxBytes}), or no batch could fill`,
      maxHeldBytes,
    );
  }
  return {
    maxRecords,
    maxBytes,
    lingerMs,
    size: b.size ?? bytes,
    maxHeldRecords,
    maxHeldBytes,
    retry: b.retry === undefined ? undefined : resolveRecordRetry(`${field}.retry`, b.retry),
    keepRecords: b.keepRecords === undefined ? true : bool(`${field}.keepRecords`, b.keepRecords),
  };
}

/** `keepRecords: false` needs a body built here: a `send` or an `encode` function reads records. */
export function checkKeepsRecords(field: string, batch: ResolvedBatch<unknown>, why: string): void {
  if (!batch.keepRecords) {
    throw new ConfigError(
      `${field}.batch.keepRecords`,
      `can be false only where shardwise encodes the batch ('ndjson' or 'json'): ${why}`,
      false,
    );
  }
}

/** `batch.retry`: the shape and defaults of the balancer's `retry` (its `retryable` is ignored). */
export function resolveRecordRetry(
  field: string,
  value: RecordRetryOptions | false | undefined,
): ResolvedRecordRetry | false {
  if (value === false) return false;
  // Only `undefined` means the default: `null` is a mistake, as the balancer's `retry: null` is.
  const v = value === undefined ? {} : value;
  checkObject(field, v);
  // The balancer's whole `retry` object may be passed: its classifier is the balancer's business.
  checkKnownKeys(field, v, ['attempts', 'backoff', 'budget', 'retryable']);
  const attempts =
    v.attempts === undefined
      ? RETRY_DEFAULTS.attempts
      : positiveInt(`${field}.attempts`, v.attempts);
  let baseMs: number = RETRY_DEFAULTS.baseMs;
  let maxMs: number = RETRY_DEFAULTS.maxMs;
  if (v.backoff !== undefined) {
    checkObject(`${field}.backoff`, v.backoff);
    checkKnownKeys(`${field}.backoff`, v.backoff, ['baseMs', 'maxMs']);
    if (v.backoff.baseMs !== undefined)
      baseMs = duration(`${field}.backoff.baseMs`, v.backoff.baseMs);
    if (v.backoff.maxMs !== undefined) maxMs = duration(`${field}.backoff.maxMs`, v.backoff.maxMs);
    if (v.backoff.baseMs === undefined) baseMs = Math.min(baseMs, maxMs); // the default fits
    if (maxMs < baseMs) {
      throw new ConfigError(
        `${field}.backoff.maxMs`,
        `must be ≥ backoff.baseMs (${baseMs})`,
        maxMs,
      );
    }
  }
  let budget: Required<RetryBudgetOptions> | false = BUDGET_DEFAULTS;
  if (v.budget === false) budget = false;
  else if (v.budget !== undefined) {
    budget = resolveBudgetOptions(v.budget, `${field}.budget`);
  }
  return { attempts, baseMs, maxMs, budget };
}

/**
 * A keyed picker (consistent hashing) routes every run by its key: an ingestion without a `key`
 * option would fail every record with `MissingKeyError`, so it is refused before any record is
 * read — unless the picker has a `fallback` for runs without a key.
 */
export function checkKeyedPicker(field: string, picker: Picker, options: unknown): void {
  if (picker.keyed !== true || picker.fallback !== undefined) return;
  if (typeof options !== 'object' || options === null) return; // the options' own check says why
  if ((options as { key?: unknown }).key !== undefined) return;
  throw new ConfigError(
    `${field}.key`,
    `must be given: picker "${picker.name}" routes every record by its key (or build the picker with a \`fallback\` picker for records without one)`,
    undefined,
  );
}

/** A source: an iterable or an async iterable. */
export function checkSource(source: unknown): void {
  if (
    source === null ||
    typeof source !== 'object' ||
    (!(Symbol.iterator in source) && !(Symbol.asyncIterator in source))
  ) {
    throw new ConfigError('source', 'must be an iterable or an async iterable', source);
  }
}

/**
 * The rule records refused one by one are sent again under: `batch.retry` when given, else the
 * balancer's own `retry` (one retry setting: the balancer's reaches batches too).
 */
export function recordRetryOf(
  own: ResolvedRecordRetry | false | undefined,
  balancer: ResolvedRetryOptions | false,
): ResolvedRecordRetry | false {
  if (own !== undefined) return own;
  if (balancer === false) return false;
  return {
    attempts: balancer.attempts,
    baseMs: balancer.baseMs,
    maxMs: balancer.maxMs,
    budget: balancer.budget,
  };
}

/**
 * The `retry` each batch's run is given: undefined (the balancer's) without `batch.retry`, else
 * its attempts and backoff with the balancer's classifier — and, for its budget, the balancer's
 * (a budget is shared by all runs) unless `batch.retry.budget` is `false`. One object for the
 * whole ingestion, so the balancer reads it once.
 */
export function runRetryOf(
  own: ResolvedRecordRetry | false | undefined,
  balancer: ResolvedRetryOptions | false,
): RetryOptions | false | undefined {
  if (own === undefined || own === false) return own;
  return {
    attempts: own.attempts,
    backoff: { baseMs: own.baseMs, maxMs: own.maxMs },
    ...(own.budget === false ? { budget: false as const } : {}),
    ...(balancer === false ? {} : { retryable: balancer.retryable }),
  };
}
