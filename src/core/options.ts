import { ConfigError, describe } from '../base/errors.js';
import type { Clock, Picker, RandomSource, ShardSpec } from '../base/types.js';
import {
  checkKnownKeys,
  checkObjectLike,
  checkPickerObject,
  checkPlainObject,
  checkTimeout,
  denseArray,
  duration,
  fn,
  oneOf,
  orDefault,
  positiveFinite,
  positiveInt,
} from '../base/validate.js';
import {
  type HealthOptions,
  type ResolvedHealthOptions,
  resolveHealthOptions,
} from '../health/options.js';
import { FIXED_CAP } from '../limits/fixed.js';
import type { ConcurrencyLimit, LimitFactory } from '../limits/types.js';
import {
  type ResolvedRetryOptions,
  type RetryOptions,
  resolveRetryOptions,
} from '../retry/options.js';
import type { Requirement } from '../routing/requirement.js';

/** Everything a `Balancer` is built from. One object, validated once, every default documented. */
export interface BalancerOptions<T = unknown> {
  /** The shards, in a stable order (at least one; ids unique). */
  shards: ShardSpec<T>[];
  /** The strategy (default `peakEwma()`). */
  picker?: Picker;
  /**
   * Calls one shard may have outstanding (default 32): a number, or an adaptive limit factory
   * (`aimd()`, `gradient()`), one instance per shard. A shard at its cap is not offered.
   *
   * Weights mean capacity: a fixed cap (a number, `fixed(n)` or the default) is the cap of a
   * shard of mean weight, and each shard gets `max(1, round(cap × weight / mean weight))` — with
   * equal weights exactly `cap`. At saturation a weight-2 shard so takes twice the work of a
   * weight-1 shard, whatever the picker. Caps follow every membership or weight change
   * (`setShards`, `addShard`, `removeShard`); `stats().shards[i].limit` is each shard's
   * effective cap. Adaptive limits (`aimd()`, `gradient()`, a `ConcurrencyLimit` object) are
   * not scaled: each learns its own shard's capacity.
   */
  maxInFlightPerShard?: number | LimitFactory | ConcurrencyLimit;
  /** Calls outstanding across all shards (default Infinity). */
  maxInFlight?: number;
  /** Runs that may wait for a slot before `ready()` waits / `run` rejects (default 1 000). */
  maxQueued?: number;
  /** Past `maxQueued`: `'wait'` accepts and queues (default), `'reject'` throws `QueueFullError`. */
  overflow?: 'wait' | 'reject';
  /** Bound on one attempt, ms (default none). The attempt's signal aborts with `TimeoutError`. */
  timeoutMs?: number;
  /**
   * Bound on how long a run may wait in all, ms, from its admission (default 120 000, Kafka's
   * `delivery.timeout.ms`): for a shard that pushes back, for a keyed run's unavailable home, for
   * a home it cannot reach. Waits like these spend no attempt; past this deadline the run fails
   * with `ShardUnavailableError` (a keyed run's home) or `RetriesExhaustedError`. Each attempt is
   * still bounded by `timeoutMs`; a run may override it (`run(fn, { deliveryTimeoutMs })`).
   */
  deliveryTimeoutMs?: number;
  /** Retries on other shards, or `false` (defaults: see `RetryOptions`). */
  retry?: RetryOptions | false;
  /** Outlier ejection and panic mode, or `false` (defaults: see `HealthOptions`). */
  health?: HealthOptions | false;
  /** Time source for latency, timeouts, backoff and ejection (default: the system clock). */
  clock?: Clock;
  /** Uniform random source in [0, 1) (default: a fast PRNG seeded from entropy). */
  random?: RandomSource;
  /**
   * Derives each run's hard routing rule from its `meta` (see `RunOptions.meta`). Returning
   * undefined means no rule. A rule is never broken: not by retries, panic mode or spill.
   */
  policy?: (meta: unknown) => Requirement | undefined;
  /**
   * Soft preference: tiers of shards in order (`[{ site: 'onprem' }, { site: 'cloud' }]`). A run
   * goes to the first tier with healthy shards that has room; it spills to the next when the tier
   * is unhealthy, or saturated for longer than `spillAfterMs`. Shards in no tier form a last one.
   */
  prefer?: Requirement[];
  /** How long a run waits for a saturated tier before it spills to the next, ms (default 0). */
  spillAfterMs?: number;
  /**
   * A shard label (`'region'`, `'site'`; `'zone'` reads a shard's `zone` when no label sets it)
   * whose values the transit ledger is broken down by: `stats().transit.region.eu.wire` is the
   * bytes sent to shards labelled `region: 'eu'` (default none).
   */
  transitLabel?: string;
}

export const BALANCER_DEFAULTS = {
  maxInFlightPerShard: 32,
  maxInFlight: Number.POSITIVE_INFINITY,
  maxQueued: 1_000,
  overflow: 'wait' as const,
  timeoutMs: Number.POSITIVE_INFINITY,
  deliveryTimeoutMs: 120_000,
};

const KNOWN = [
  'shards',
  'picker',
  'maxInFlightPerShard',
  'maxInFlight',
  'maxQueued',
  'overflow',
  'timeoutMs',
  'deliveryTimeoutMs',
  'retry',
  'health',
  'clock',
  'random',
  'policy',
  'prefer',
  'spillAfterMs',
  'transitLabel',
];

export interface ResolvedOptions {
  maxInFlightPerShard: number;
  /** Makes each shard's adaptive limit; undefined for a fixed cap. */
  limitFactory: LimitFactory | undefined;
  maxInFlight: number;
  maxQueued: number;
  overflow: 'wait' | 'reject';
  timeoutMs: number;
  deliveryTimeoutMs: number;
  spillAfterMs: number;
  transitLabel: string | undefined;
  retry: ResolvedRetryOptions | false;
  health: ResolvedHealthOptions | false;
}

/** Validates everything but the shard list and the picker/clock/random objects' presence. */
export function resolveOptions(
  options: BalancerOptions<unknown>,
  extraKnown: readonly string[] = [],
): ResolvedOptions {
  checkPlainObject('options', options);
  checkKnownKeys('', options, [...KNOWN, ...extraKnown]);
  const o = options;
  if (o.picker !== undefined) checkPicker(o.picker);
  if (o.clock !== undefined) {
    checkObjectLike('clock', o.clock);
    fn('clock.now', o.clock.now);
    fn('clock.setTimer', o.clock.setTimer);
  }
  if (o.random !== undefined) fn('random', o.random);
  if (o.policy !== undefined) fn('policy', o.policy);
  if (o.prefer !== undefined) checkPrefer(o.prefer);
  // `fixed(n)` is the number n: a fixed cap, scaled by weight as a number is.
  const perShard = fixedCapOf(o.maxInFlightPerShard) ?? o.maxInFlightPerShard;
  const limitFactory = resolveLimit(perShard);
  return {
    limitFactory,
    maxInFlightPerShard:
      perShard === undefined || limitFactory !== undefined
        ? BALANCER_DEFAULTS.maxInFlightPerShard
        : positiveInt('maxInFlightPerShard', perShard, true),
    maxInFlight: orDefault(o.maxInFlight, BALANCER_DEFAULTS.maxInFlight, (v) =>
      positiveInt('maxInFlight', v, true),
    ),
    maxQueued: orDefault(o.maxQueued, BALANCER_DEFAULTS.maxQueued, (v) =>
      positiveInt('maxQueued', v, true),
    ),
    overflow: o.overflow === undefined ? 'wait' : oneOf('overflow', o.overflow, ['wait', 'reject']),
    timeoutMs: orDefault(o.timeoutMs, BALANCER_DEFAULTS.timeoutMs, (v) =>
      checkTimeout('timeoutMs', v),
    ),
    deliveryTimeoutMs: orDefault(o.deliveryTimeoutMs, BALANCER_DEFAULTS.deliveryTimeoutMs, (v) =>
      checkTimeout('deliveryTimeoutMs', v),
    ),
    spillAfterMs: orDefault(o.spillAfterMs, 0, (v) => duration('spillAfterMs', v)),
    transitLabel: o.transitLabel === undefined ? undefined : checkLabelName(o.transitLabel),
    retry: resolveRetryOptions(o.retry),
    health: resolveHealthOptions(o.health),
  };
}

function fixedCapOf(value: unknown): number | undefined {
  return typeof value === 'function' ? (value as { [FIXED_CAP]?: number })[FIXED_CAP] : undefined;
}

function checkLabelName(value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigError(
      'transitLabel',
      "must be a shard label's name (a non-empty string)",
      value,
    );
  }
  return value;
}

/**
 * A function is a limit factory; an object with `limit` and `onSample` is a limit shared by
 * every shard unless it offers `clone()`, which then makes one per shard.
 */
function resolveLimit(value: unknown): LimitFactory | undefined {
  if (typeof value === 'function') {
    const factory = value as () => unknown;
    return () => checkedLimit(factory(), 'a limit factory returned');
  }
  if (typeof value === 'object' && value !== null) {
    const limit = checkedLimit(value) as ConcurrencyLimit & { clone?: () => ConcurrencyLimit };
    return typeof limit.clone === 'function'
      ? () => checkedLimit(limit.clone!(), 'its clone() returned')
      : () => limit;
  }
  return undefined;
}

/**
 * A `ConcurrencyLimit`: `onSample()` and a numeric `limit` that is not NaN (a shard whose cap is
 * NaN would never be offered, and every run would wait on it). Checked each time a shard gets
 * one, so `maxInFlightPerShard: gradient` (the maker, not `gradient()`) fails at once, by name.
 */
function checkedLimit(value: unknown, from?: string): ConcurrencyLimit {
  const limit = value as Partial<ConcurrencyLimit> | null;
  const valid =
    typeof limit === 'object' &&
    limit !== null &&
    typeof limit.onSample === 'function' &&
    typeof limit.limit === 'number' &&
    !Number.isNaN(limit.limit);
  if (valid) return limit as ConcurrencyLimit;
  const expectation =
    'must be a positive integer, a limit factory such as aimd(), or a ConcurrencyLimit (an object with onSample() and a numeric limit)';
  if (from === undefined) throw new ConfigError('maxInFlightPerShard', expectation, value);
  const hint =
    typeof value === 'function' ? ' (pass the factory, such as gradient(), not its maker)' : '';
  throw new ConfigError(
    'maxInFlightPerShard',
    `${expectation}; ${from} ${describe(value)}${hint}`,
    value,
    { given: false },
  );
}

export { checkTimeout } from '../base/validate.js';

/** Tiers: a dense, non-empty array of plain label requirements (compiled by routing). */
function checkPrefer(value: unknown): void {
  if (!Array.isArray(value) || value.length === 0) {
    throw new ConfigError('prefer', 'must be a non-empty array of label requirements', value);
  }
  denseArray('prefer', value, 'label requirements');
  value.forEach((tier, i) => {
    checkPlainObject(`prefer[${i}]`, tier);
  });
}

export function checkPicker(picker: unknown): asserts picker is Picker {
  checkPickerObject('picker', picker);
  fn('picker.pick', (picker as Picker).pick);
  if ((picker as Picker).rebuild !== undefined) fn('picker.rebuild', (picker as Picker).rebuild);
  if (typeof (picker as Picker).name !== 'string') {
    throw new ConfigError('picker.name', 'must be a string', (picker as Picker).name);
  }
}

/** The largest shard weight: weights are relative capacities, and past this they overflow rings and sums. */
export const MAX_WEIGHT = 1_000_000;

/** Checks one shard spec; `field` is its path, e.g. `shards[2]`. */
export function checkShardSpec(field: string, spec: unknown): asserts spec is ShardSpec<unknown> {
  checkPlainObject(field, spec);
  checkKnownKeys(field, spec, ['id', 'target', 'weight', 'zone', 'labels']);
  const s = spec as ShardSpec<unknown>;
  if (typeof s.id !== 'string' || s.id.length === 0) {
    throw new ConfigError(`${field}.id`, 'must be a non-empty string', s.id);
  }
  if (!('target' in s)) throw new ConfigError(`${field}.target`, 'is required', undefined);
  if (s.weight !== undefined) {
    positiveFinite(`${field}.weight`, s.weight);
    if (s.weight > MAX_WEIGHT) {
      throw new ConfigError(`${field}.weight`, `must be at most ${MAX_WEIGHT}`, s.weight);
    }
  }
  if (s.zone !== undefined && typeof s.zone !== 'string') {
    throw new ConfigError(`${field}.zone`, 'must be a string', s.zone);
  }
  if (s.labels !== undefined) {
    checkPlainObject(`${field}.labels`, s.labels);
    for (const [name, value] of Object.entries(s.labels)) {
      if (typeof value !== 'string')
        throw new ConfigError(`${field}.labels.${name}`, 'must be a string', value);
    }
  }
}

/**
 * Checks a whole shard list: a dense array of at least one spec, each valid, ids unique. With
 * `prepare`, each entry is first turned into a core spec (a transport's own spec shape).
 */
export function checkShardList<T = unknown>(
  field: string,
  shards: unknown,
  prepare?: (spec: unknown, field: string) => ShardSpec<T>,
): ShardSpec<T>[] {
  const list = denseArray(field, shards, 'shard specs');
  if (list.length === 0) throw new ConfigError(field, 'must list at least one shard', shards);
  const seen = new Set<string>();
  return list.map((given, i) => {
    const at = `${field}[${i}]`;
    const spec = prepare === undefined ? given : prepare(given, at);
    checkShardSpec(at, spec);
    if (seen.has(spec.id))
      throw new ConfigError(`${at}.id`, 'must be unique, and is used twice', spec.id);
    seen.add(spec.id);
    return spec as ShardSpec<T>;
  });
}
