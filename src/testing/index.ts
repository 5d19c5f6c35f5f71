/**
 * shardwise/testing — deterministic tools to test pickers and configurations: a manual clock,
 * a seeded random source, and (with the simulator) shards on virtual time.
 */
import { createRandom } from '../random.js';
import type { RandomSource } from '../types.js';

export { ManualClock } from './manual-clock.js';

/**
 * A seeded uniform source in [0, 1): the same seed gives the same sequence, in any process.
 *
 * @example
 * const balancer = new Balancer({ shards, random: seededRandom(42), clock: new ManualClock() });
 */
export function seededRandom(seed: number): RandomSource {
  return createRandom(seed);
}
