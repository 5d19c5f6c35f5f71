import type { Picker, ShardState } from '../base/types.js';

/**
 * Each shard in turn, by membership order, starting at the first — again after each rebuild (a new balancer or a new
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
      if (shards.length === 0) return undefined;
      // The cursor is a membership index, not a position in the list offered: a list that
      // leaves a shard out (one tried, at its cap, ejected) must not hand one shard every turn.
      if (next < shards.length) {
        const at = shards[next]!;
        if (at.index === next) {
          next++;
          return at;
        }
      }
      let turn: ShardState | undefined;
      let first = shards[0]!;
      for (const shard of shards) {
        if (shard.index >= next && (turn === undefined || shard.index < turn.index)) turn = shard;
        if (shard.index < first.index) first = shard;
      }
      const chosen = turn ?? first;
      next = chosen.index + 1;
      return chosen;
    },
  };
}
