import type { Picker } from '../types.js';

/**
 * Each shard in turn, starting at the first — again after each rebuild (a new balancer or a new
 * membership), so one instance reused by two balancers or two `simulate()` runs gives the same
 * sequence. Ignores weights and load: the baseline every other picker is measured against.
 *
 * @example
 * new Balancer({ shards, picker: roundRobin() });
 */
export function roundRobin(): Picker {
  let next = 0;
  return {
    name: 'round-robin',
    rebuild() {
      next = 0;
    },
    pick(shards) {
      const n = shards.length;
      if (n === 0) return undefined;
      if (next >= n) next = 0;
      return shards[next++];
    },
  };
}
