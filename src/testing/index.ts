/**
 * shardwise/testing — deterministic tools to test pickers and configurations: a manual clock,
 * a seeded random source, latency distributions, a simulator that drives the real `Balancer` on
 * virtual time, shard views to drive a picker directly, the remap measure of hashing pickers, and
 * the picker conformance checks.
 */
import { ConfigError } from '../base/errors.js';
import { createRandom } from '../base/random.js';
import type { RandomSource } from '../base/types.js';

export {
  type ConformanceOptions,
  type ConformanceReport,
  INVARIANTS,
  pickerConformance,
} from './conformance.js';
export { constant, type Distribution, exponential, lognormal, pareto } from './distributions.js';
export { ManualClock } from './manual-clock.js';
export { type RemapOptions, remapFraction } from './remap.js';
export type { Series } from './series.js';
export { type ShardLike, type ShardViewSpec, shardViews } from './shard-views.js';
export type { ShardChange, SimShardSpec } from './sim-shard.js';
export { type SimulationResult, simulate } from './simulate.js';
export type { SimulateOptions } from './simulate-options.js';
export {
  LATENCY_BUCKET_EDGES_MS,
  type LatencyHistogram,
  type LatencySummary,
  quantile,
  type ShardResult,
  type WarmupSummary,
} from './summary.js';
export type { Arrivals, KeySpec } from './workload.js';

/**
 * A seeded uniform source in [0, 1): the same seed gives the same sequence, in any process.
 *
 * @example
 * const balancer = new Balancer({ shards, random: seededRandom(42), clock: new ManualClock() });
 */
export function seededRandom(seed: number): RandomSource {
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed)) {
    throw new ConfigError('seed', 'must be an integer', seed);
  }
  return createRandom(seed);
}
