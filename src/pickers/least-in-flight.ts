import type { Picker } from '../base/types.js';
import { inFlightLoad } from './p2c.js';

/**
 * The shard with the fewest calls outstanding per unit of weight. O(n) per pick: exact where P2C
 * is approximate, for small fleets. Ties are broken uniformly at random, so idle shards share the
 * work instead of the first taking it all: the scan notes the indices of the shards at the least
 * load so far (in a buffer the picker keeps), and one random draw chooses among them. One draw a
 * pick instead of one a tie (reservoir sampling): against that, measured alternately in one
 * process, 0.50× the time a pick took on an idle fleet of 1 000 (every shard ties) and 0.64× at 8;
 * 0.84× at 1 000 with in-flight counts of 0 to 3, and the same at 8.
 *
 * @example
 * new Balancer({ shards, picker: leastInFlight() });
 */
export function leastInFlight(): Picker {
  let ties = new Int32Array(16);
  return {
    name: 'least-in-flight',
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      if (ties.length < n) ties = new Int32Array(n);
      let bestLoad = inFlightLoad(shards[0]!);
      let count = 1;
      ties[0] = 0;
      for (let i = 1; i < n; i++) {
        const load = inFlightLoad(shards[i]!);
        if (load < bestLoad) {
          bestLoad = load;
          ties[0] = i;
          count = 1;
        } else if (load === bestLoad) {
          ties[count++] = i;
        }
      }
      if (count === 1) return shards[ties[0]!];
      return shards[ties[Math.min(count - 1, Math.floor(request.random() * count))]!];
    },
  };
}
