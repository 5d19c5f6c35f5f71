import type { Picker, ShardState } from '../types.js';
import { inFlightLoad } from './p2c.js';

/**
 * The shard with the fewest calls outstanding per unit of weight. O(n) per pick: exact where P2C
 * is approximate, for small fleets. Ties are broken uniformly at random (reservoir sampling),
 * so idle shards share the work instead of the first taking it all.
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
      let best: ShardState = shards[0]!;
      let bestLoad = inFlightLoad(best);
      let ties = 1;
      for (let i = 1; i < n; i++) {
        const shard = shards[i]!;
        const load = inFlightLoad(shard);
        if (load < bestLoad) {
          best = shard;
          bestLoad = load;
          ties = 1;
        } else if (load === bestLoad && request.random() * ++ties < 1) {
          // Reservoir sampling over the ties: each tied shard is kept with probability 1/ties.
          best = shard;
        }
      }
      return best;
    },
  };
}
