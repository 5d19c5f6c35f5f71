/**
 * shardwise/testing — deterministic tools to test pickers and configurations: a manual clock,
 * a seeded random source, latency distributions, a simulator that drives the real `Balancer` on
 * virtual time, the remap measure of hashing pickers, and the picker conformance checks.
 */
import { createRandom } from '../random.js';
import type { RandomSource } from '../types.js';

export {
  type ConformanceOptions,
  type ConformanceReport,
  INVARIANTS,
  pickerConformance,
} from './conformance.js';
export { constant, type Distribution, exponential, lognormal, pareto } from './distributions.js';
export { ManualClock } from './manual-clock.js';
export { type RemapOptions, remapFraction } from './remap.js';
export type { ShardLike } from './shard-views.js';
export {
  type Arrivals,
  type KeySpec,
  type LatencySummary,
  type ShardChange,
  type ShardResult,
  type SimShardSpec,
  type SimulateOptions,
  type SimulationResult,
  simulate,
} from './simulate.js';

/**
 * A seeded uniform source in [0, 1): the same seed gives the same sequence, in any process.
 *
 * @example
 * const balancer = new Balancer({ shards, random: seededRandom(42), clock: new ManualClock() });
 */
export function seededRandom(seed: number): RandomSource {
  return createRandom(seed);
}
