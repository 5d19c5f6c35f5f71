import { positiveInt } from '../base/validate.js';
import type { LimitFactory } from './types.js';

/** Marks a factory made by {@link fixed}: the balancer reads it as the number it stands for. */
export const FIXED_CAP: unique symbol = Symbol('shardwise.fixedCap');

/**
 * A cap that never moves: the same as `maxInFlightPerShard: n`, scaled by weight the same way
 * (a shard's cap is `max(1, round(n × weight / mean weight))`; `n` with equal weights).
 *
 * @example
 * new Balancer({ shards, maxInFlightPerShard: fixed(16) });
 */
export function fixed(n: number): LimitFactory {
  const limit = positiveInt('fixed(n)', n);
  return Object.assign(() => ({ limit, onSample() {} }), { [FIXED_CAP]: limit });
}
