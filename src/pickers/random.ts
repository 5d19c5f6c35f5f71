import type { Picker } from '../types.js';

/**
 * A uniformly random shard, in proportion to weight when weights differ. Stateless; the load it
 * spreads is only balanced on average (max load ~ ln n / ln ln n for n runs on n shards).
 *
 * @example
 * new Balancer({ shards, picker: random() });
 */
export function random(): Picker {
  return {
    name: 'random',
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const first = shards[0]!.weight;
      let total = 0;
      let uniform = true;
      for (let i = 0; i < n; i++) {
        const w = shards[i]!.weight;
        total += w;
        if (w !== first) uniform = false;
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
