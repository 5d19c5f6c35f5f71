import { checkKnownKeys, checkObject, duration, inRange, positiveInt } from '../validate.js';

/** Outlier ejection and panic mode (Envoy-style). Percentages are 0–100. */
export interface HealthOptions {
  /** Failures in a row that eject a shard (default 5). */
  consecutiveFailures?: number;
  /** Ejection time for the first ejection; the n-th lasts n × this (default 30 000 ms). */
  baseEjectionMs?: number;
  /** Cap on one ejection's length (default 300 000 ms). */
  maxEjectionMs?: number;
  /** At most this share of shards ejected at once, always at least one (default 10). */
  maxEjectedPercent?: number;
  /** Below this share of healthy shards, ejection is ignored and all shards are picked (default 50). */
  panicThreshold?: number;
}

export type ResolvedHealthOptions = Required<HealthOptions>;

export const HEALTH_DEFAULTS: ResolvedHealthOptions = {
  consecutiveFailures: 5,
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
  checkObject('health', value);
  checkKnownKeys('health', value, Object.keys(HEALTH_DEFAULTS));
  const o = { ...HEALTH_DEFAULTS };
  if (value.consecutiveFailures !== undefined) {
    o.consecutiveFailures = positiveInt('health.consecutiveFailures', value.consecutiveFailures);
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
