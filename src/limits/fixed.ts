import { positiveInt } from '../validate.js';
import type { LimitFactory } from './types.js';

/**
 * A cap that never moves: the same as `maxInFlightPerShard: n`.
 *
 * @example
 * new Balancer({ shards, maxInFlightPerShard: fixed(16) });
 */
export function fixed(n: number): LimitFactory {
  const limit = positiveInt('fixed(n)', n);
  return () => ({ limit, onSample() {} });
}
