import type { Picker, ShardState } from '../base/types.js';

/**
 * A uniformly random shard, in proportion to weight when weights differ. Stateless; the load it
 * spreads is only balanced on average (max load ~ ln n / ln ln n for n runs on n shards).
 *
 * @example
 * new Balancer({ shards, picker: random() });
 */
export function random(): Picker {
  // For the full membership the weights are summed once, in rebuild; subsets are summed per pick.
  let members: readonly ShardState[] | undefined;
  let membersTotal = 0;
  let membersUniform = true;
  return {
    name: 'random',
    rebuild(shards) {
      members = shards;
      const summed = sumWeights(shards);
      membersTotal = summed.total;
      membersUniform = summed.uniform;
    },
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      let total = membersTotal;
      let uniform = membersUniform;
      if (shards !== members) {
        total = 0;
        uniform = true;
        const first = shards[0]!.weight;
        for (let i = 0; i < n; i++) {
          const w = shards[i]!.weight;
          total += w;
          if (w !== first) uniform = false;
        }
      }
      if (uniform) return shards[(request.random() * n) | 0];
      let point = request.random() * total;
      for (let i = 0; i < n; i++) {
        point -= shards[i]!.weight;
        if (point < 0) return shards[i];
      }
      return shards[n - 1];
    },
  };
}

function sumWeights(shards: readonly ShardState[]): { total: number; uniform: boolean } {
  let total = 0;
  let uniform = true;
  const first = shards[0]?.weight;
  for (const shard of shards) {
    total += shard.weight;
    if (shard.weight !== first) uniform = false;
  }
  return { total, uniform };
}
