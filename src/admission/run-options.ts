/**
 * The checks of `run()` and `wrap()` options, next to the balancer's own (`options.ts`). A run's
 * options are read into a reused object: `run()` is the hot path and allocates nothing here.
 */
import { ConfigError } from '../base/errors.js';
import type { CompiledRequirement, Key, Requirement, ShardState } from '../base/types.js';
import {
  bool,
  checkKnownKeys,
  checkObject,
  checkTimeout,
  nonNegativeInt,
} from '../base/validate.js';
import {
  type ResolvedRetryOptions,
  type RetryOptions,
  resolveRetryOptions,
} from '../retry/options.js';
import type { RunContext, RunOptions } from './run.js';

const RUN_OPTION_KEYS = [
  'key',
  'signal',
  'timeoutMs',
  'deliveryTimeoutMs',
  'idempotent',
  'bytes',
  'require',
  'meta',
  'retry',
];

/**
 * Per-run `retry` objects, resolved once each: an ingestion passes the same object with every
 * batch, and resolving it per run would cost every batch a validation.
 */
const resolvedRetries = new WeakMap<object, ResolvedRetryOptions>();

/** One run's options, checked. */
export interface RunSettings {
  key: Key | undefined;
  signal: AbortSignal | undefined;
  timeoutMs: number;
  deliveryTimeoutMs: number;
  idempotent: boolean;
  bytes: number;
  require: Requirement | undefined;
  meta: unknown;
  /** The run's own retry rule; undefined: the balancer's. */
  retry: ResolvedRetryOptions | false | undefined;
}

/** A fresh settings object with the balancer's defaults. */
export function runSettings(): RunSettings {
  return {
    key: undefined,
    signal: undefined,
    timeoutMs: Number.POSITIVE_INFINITY,
    deliveryTimeoutMs: Number.POSITIVE_INFINITY,
    idempotent: false,
    bytes: 0,
    require: undefined,
    meta: undefined,
    retry: undefined,
  };
}

/** Reads `options` into `into` (reset to the defaults first); throws `ConfigError`. */
export function readRunOptions(
  options: RunOptions | undefined,
  defaults: { timeoutMs: number; deliveryTimeoutMs: number },
  into: RunSettings,
): void {
  into.key = undefined;
  into.signal = undefined;
  into.timeoutMs = defaults.timeoutMs;
  into.deliveryTimeoutMs = defaults.deliveryTimeoutMs;
  into.idempotent = false;
  into.bytes = 0;
  into.require = undefined;
  into.meta = undefined;
  into.retry = undefined;
  if (options === undefined) return;
  checkObject('run options', options);
  checkKnownKeys('run options', options, RUN_OPTION_KEYS);
  const key = options.key;
  if (key !== undefined && typeof key !== 'string' && !(key instanceof Uint8Array)) {
    throw new ConfigError('key', 'must be a string or a Uint8Array', key);
  }
  into.key = key;
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ConfigError('signal', 'must be an AbortSignal', signal);
  }
  into.signal = signal;
  if (options.timeoutMs !== undefined)
    into.timeoutMs = checkTimeout('timeoutMs', options.timeoutMs);
  if (options.deliveryTimeoutMs !== undefined)
    into.deliveryTimeoutMs = checkTimeout('deliveryTimeoutMs', options.deliveryTimeoutMs);
  if (options.idempotent !== undefined) into.idempotent = bool('idempotent', options.idempotent);
  if (options.retry !== undefined) into.retry = runRetry(options.retry);
  if (options.bytes !== undefined) into.bytes = nonNegativeInt('bytes', options.bytes);
  into.require = options.require;
  into.meta = options.meta;
}

/**
 * A run's own `retry`: `false`, or an object resolved once per object. Its `budget` may only be
 * `false` (this run spends none): the budget itself is the balancer's, shared by all its runs.
 */
function runRetry(value: RetryOptions | false): ResolvedRetryOptions | false {
  if (value === false) return false;
  if (typeof value === 'object' && value !== null) {
    const cached = resolvedRetries.get(value);
    if (cached !== undefined) return cached;
  }
  const budget = (value as RetryOptions | null)?.budget;
  if (budget !== undefined && budget !== false) {
    throw new ConfigError(
      'retry.budget',
      "must be false or left out in a run's own retry: the retry budget is the balancer's, shared by its runs",
      budget,
    );
  }
  const resolved = resolveRetryOptions(value) as ResolvedRetryOptions;
  resolvedRetries.set(value, resolved);
  return resolved;
}

/**
 * A run's hard rule: its own `require`, else what the balancer's `policy` derives from its
 * `meta`, compiled (and checked) against the membership; undefined for none.
 */
export function ruleOf(
  require: Requirement | undefined,
  meta: unknown,
  policy: ((meta: unknown) => Requirement | undefined) | undefined,
  rules: { rule(field: string, value: Requirement): CompiledRequirement },
): CompiledRequirement | undefined {
  if (require !== undefined) return rules.rule('require', require);
  const derived = policy?.(meta);
  return derived === undefined ? undefined : rules.rule('policy(meta)', derived);
}

/** Options of `Balancer.wrap`. */
export interface WrapOptions<A extends unknown[]> {
  key?: (...args: A) => Key | undefined;
  require?: (...args: A) => Requirement | undefined;
  idempotent?: boolean;
  bytes?: (...args: A) => number;
}

/**
 * Checks `wrap()`'s function and options, and returns the wrapper: each call becomes one `run`
 * whose options are derived from the call's arguments.
 */
export function wrapper<T, A extends unknown[], R>(
  run: (
    fn: (shard: ShardState<T>, ctx: RunContext) => Promise<R>,
    options: RunOptions,
  ) => Promise<R>,
  /** Rejects a call turned away before its run, counted as `run()` counts its own. */
  refuse: (error: unknown) => Promise<never>,
  fn: (shard: ShardState<T>, ctx: RunContext, ...args: A) => Promise<R>,
  options: WrapOptions<A>,
): (...args: A) => Promise<R> {
  if (typeof fn !== 'function') throw new ConfigError('fn', 'must be a function', fn);
  checkObject('wrap options', options);
  checkKnownKeys('wrap options', options, ['key', 'idempotent', 'bytes', 'require']);
  const { key, bytes, require } = options;
  for (const [field, value] of [
    ['require', require],
    ['key', key],
    ['bytes', bytes],
  ] as const) {
    if (value !== undefined && typeof value !== 'function') {
      throw new ConfigError(`wrap.${field}`, 'must be a function', value);
    }
  }
  const idempotent =
    options.idempotent === undefined ? false : bool('wrap.idempotent', options.idempotent);
  return (...args: A) => {
    const runOptions: RunOptions = { idempotent };
    // An extractor that throws (a malformed record) rejects this call only: the wrapped function
    // returns a promise, and a caller's `.catch()` must see every failure, never a throw.
    try {
      if (key !== undefined) runOptions.key = key(...args);
      if (bytes !== undefined) runOptions.bytes = bytes(...args);
      if (require !== undefined) {
        const rule = require(...args);
        if (rule !== undefined) runOptions.require = rule;
      }
    } catch (error) {
      return refuse(error);
    }
    return run((shard, ctx) => fn(shard, ctx, ...args), runOptions);
  };
}
