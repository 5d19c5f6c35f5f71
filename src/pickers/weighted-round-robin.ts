import type { Picker, ShardState } from '../base/types.js';

/**
 * Smooth weighted round robin (nginx): each pick adds every candidate's weight to its running
 * score, takes the highest score and subtracts the total from it. Weights 5,1,1 give
 * a a b a c a a — spread out, never a burst of five. O(n) per pick.
 *
 * @example
 * new Balancer({ shards: [{ id: 'big', target, weight: 5 }, { id: 'small', target }], picker: weightedRoundRobin() });
 */
export function weightedRoundRobin(): Picker {
  // Running scores by shard index; grown in rebuild (and defensively in pick for standalone use).
  let scores = new Float64Array(0);
  return {
    name: 'weighted-round-robin',
    rebuild(shards: readonly ShardState[]) {
      scores = new Float64Array(shards.length);
    },
    pick(shards) {
      let best: ShardState | undefined;
      let bestScore = Number.NEGATIVE_INFINITY;
      let total = 0;
      for (let i = 0; i < shards.length; i++) {
        const shard = shards[i]!;
        if (shard.index >= scores.length) {
          const grown = new Float64Array(shard.index + 1);
          grown.set(scores);
          scores = grown;
        }
        const score = scores[shard.index]! + shard.weight;
        scores[shard.index] = score;
        total += shard.weight;
        if (score > bestScore) {
          bestScore = score;
          best = shard;
        }
      }
      if (best !== undefined) scores[best.index]! -= total;
      return best;
    },
  };
}
