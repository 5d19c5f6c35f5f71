import type { Picker, ShardState } from '../base/types.js';

/**
 * The d-choice pick (Mitzenmacher's supermarket model with d choices; Azar, Broder, Karlin & Upfal,
 * "Balanced allocations"): sample `d` distinct shards uniformly, keep the least loaded, ties to
 * the first sampled. Max load falls as ln ln n / ln d: d = 3 halves what d = 2 leaves above
 * ln ln n, at one more random draw and one more load read per pick.
 *
 * Sampling without replacement generalises Finagle's "hole" trick: the k-th draw is uniform over
 * the n − k shards not drawn yet, and steps over each drawn index at or below it, in ascending
 * order. Every ordered d-tuple of distinct shards is equally likely; no retry loop, and no
 * allocation: the drawn indices live in one typed array made with the picker. O(d²) per pick,
 * fine for d ≤ MAX_CHOICES. With fewer shards than `d`, all of them are drawn (in random order,
 * so ties still go to a uniformly random one).
 */
export function dChoices(name: string, d: number, loadOf: (shard: ShardState) => number): Picker {
  const drawn = new Int32Array(d);
  return {
    name,
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const random = request.random;
      const draws = Math.min(d, n);
      let best = 0;
      let bestLoad = 0;
      for (let k = 0; k < draws; k++) {
        let index = (random() * (n - k)) | 0;
        // Step over the drawn indices (ascending) and insert this one in its place.
        let at = 0;
        while (at < k && drawn[at]! <= index) {
          index++;
          at++;
        }
        for (let m = k; m > at; m--) drawn[m] = drawn[m - 1]!;
        drawn[at] = index;
        // One load read site in the loop: V8 inlines the load getter once, not d times.
        const load = loadOf(shards[index]!);
        if (k === 0 || load < bestLoad) {
          best = index;
          bestLoad = load;
        }
      }
      return shards[best];
    },
  };
}
