/**
 * The checks of `run()` and `wrap()` options, next to the balancer's own (`options.ts`). A run's
 * options are read into a reused object: `run()` is the hot path and allocates nothing here.
 */
import { ConfigError } from './errors.js';
import { checkTimeout } from './options.js';
import type { CompiledRequirement, Requirement } from './routing/requirement.js';
import type { RunContext, RunOptions } from './run.js';
import type { Key, ShardState } from './types.js';
import { bool, checkKnownKeys, checkObject, nonNegativeInt } from './validate.js';

const RUN_OPTION_KEYS = ['key', 'signal', 'timeoutMs', 'idempotent', 'bytes', 'require', 'meta'];

/** One run's options, checked. */
export interface RunSettings {
  key: Key | undefined;
  signal: AbortSignal | undefined;
  timeoutMs: number;
  idempotent: boolean;
  bytes: number;
  require: Requirement | undefined;
  meta: unknown;
}

/** A fresh settings object with the balancer's defaults. */
export function runSettings(): RunSettings {
  return {
    key: undefined,
    signal: undefined,
    timeoutMs: Number.POSITIVE_INFINITY,
    idempotent: false,
    bytes: 0,
    require: undefined,
    meta: undefined,
  };
}

/** Reads `options` into `into` (reset to the defaults first); throws `ConfigError`. */
export function readRunOptions(
  options: RunOptions | undefined,
  defaultTimeoutMs: number,
  into: RunSettings,
): void {
  into.key = undefined;
  into.signal = undefined;
  into.timeoutMs = defaultTimeoutMs;
  into.idempotent = false;
  into.bytes = 0;
  into.require = undefined;
  into.meta = undefined;
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
  if (options.idempotent !== undefined) into.idempotent = bool('idempotent', options.idempotent);
  if (options.bytes !== undefined) into.bytes = nonNegativeInt('bytes', options.bytes);
  into.require = options.require;
  into.meta = options.meta;
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
