import type { Picker, ShardState } from '../types.js';
import { inFlightLoad } from './p2c.js';

/**
 * The shard with the fewest calls outstanding per unit of weight. O(n) per pick: exact where P2C
 * is approximate, for small fleets. The scan starts at a random shard so ties spread out instead
 * of piling onto the first.
 *
 * @example
 * new Balancer({ shards, picker: leastInFlight() });
 */
export function leastInFlight(): Picker {
  return {
    name: 'least-in-flight',
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const start = (request.random() * n) | 0;
      let best: ShardState = shards[start]!;
      let bestLoad = inFlightLoad(best);
      for (let k = 1; k < n; k++) {
        const shard = shards[(start + k) % n]!;
        const load = inFlightLoad(shard);
        if (load < bestLoad) {
          best = shard;
          bestLoad = load;
        }
      }
      return best;
    },
  };
}
