import {
  checkKnownKeys,
  checkPlainObject,
  duration,
  inRange,
  positiveInt,
} from '../base/validate.js';

/** Outlier ejection and panic mode (Envoy-style). Percentages are 0–100. */
export interface HealthOptions {
  /** Failures in a row that eject a shard (default 5). */
  consecutiveFailures?: number;
  /**
   * Failure-rate ejection (Envoy's failure-percentage detector): a shard whose failures reach
   * this share of its attempts within `failureWindowMs` is ejected, once it had at least
   * `failureMinRequests` attempts there. `false` turns it off (default 50).
   */
  failurePercent?: number | false;
  /** Attempts a shard needs within the window before its failure rate counts (default 20). */
  failureMinRequests?: number;
  /** The failure-rate window, ms (default 10 000): the last this many ms, sliding by a tenth. */
  failureWindowMs?: number;
  /** Ejection time for the first ejection; the n-th lasts n × this (default 30 000 ms). */
  baseEjectionMs?: number;
  /** Cap on one ejection's length (default 300 000 ms). */
  maxEjectionMs?: number;
  /**
   * At most this share of shards ejected at once (default 10). The cap is
   * `max(1, floor(shards × maxEjectedPercent / 100))`: one shard can always be ejected, whatever
   * the fleet's size; a shard that would pass the cap stays in, its failures still raising its
   * cost so the pickers avoid it.
   */
  maxEjectedPercent?: number;
  /** Below this share of healthy shards, ejection is ignored and all shards are picked (default 50). */
  panicThreshold?: number;
}

export interface ResolvedHealthOptions {
  consecutiveFailures: number;
  /** Off when Infinity. */
  failurePercent: number;
  failureMinRequests: number;
  failureWindowMs: number;
  baseEjectionMs: number;
  maxEjectionMs: number;
  maxEjectedPercent: number;
  panicThreshold: number;
}

export const HEALTH_DEFAULTS: ResolvedHealthOptions = {
  consecutiveFailures: 5,
  failurePercent: 50,
  failureMinRequests: 20,
  failureWindowMs: 10_000,
  baseEjectionMs: 30_000,
  maxEjectionMs: 300_000,
  maxEjectedPercent: 10,
  panicThreshold: 50,
};

export function resolveHealthOptions(
  value: HealthOptions | false | undefined,
): ResolvedHealthOptions | false {
  if (value === false) return false;
  if (value === undefined) return HEALTH_DEFAULTS;
  checkPlainObject('health', value);
  checkKnownKeys('health', value, Object.keys(HEALTH_DEFAULTS));
  const o = { ...HEALTH_DEFAULTS };
  if (value.consecutiveFailures !== undefined) {
    o.consecutiveFailures = positiveInt('health.consecutiveFailures', value.consecutiveFailures);
  }
  if (value.failurePercent !== undefined) {
    o.failurePercent =
      value.failurePercent === false
        ? Number.POSITIVE_INFINITY
        : inRange('health.failurePercent', value.failurePercent, 1, 100);
  }
  if (value.failureMinRequests !== undefined) {
    o.failureMinRequests = positiveInt('health.failureMinRequests', value.failureMinRequests);
  }
  if (value.failureWindowMs !== undefined) {
    o.failureWindowMs = duration('health.failureWindowMs', value.failureWindowMs, true);
  }
  if (value.baseEjectionMs !== undefined) {
    o.baseEjectionMs = duration('health.baseEjectionMs', value.baseEjectionMs, true);
  }
  if (value.maxEjectionMs !== undefined) {
    o.maxEjectionMs = duration('health.maxEjectionMs', value.maxEjectionMs, true);
  }
  if (value.maxEjectedPercent !== undefined) {
    o.maxEjectedPercent = inRange('health.maxEjectedPercent', value.maxEjectedPercent, 0, 100);
  }
  if (value.panicThreshold !== undefined) {
    o.panicThreshold = inRange('health.panicThreshold', value.panicThreshold, 0, 100);
  }
  return o;
}
