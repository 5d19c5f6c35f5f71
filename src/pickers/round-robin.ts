import type { Picker } from '../types.js';

/**
 * Each shard in turn, starting at the first. Ignores weights and load: the baseline every other
 * picker is measured against.
 *
 * @example
 * new Balancer({ shards, picker: roundRobin() });
 */
export function roundRobin(): Picker {
  let next = 0;
  return {
    name: 'round-robin',
    pick(shards) {
      const n = shards.length;
      if (n === 0) return undefined;
      if (next >= n) next = 0;
      return shards[next++];
    },
  };
}
