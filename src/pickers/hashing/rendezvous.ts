import { ConfigError } from '../../base/errors.js';
import type { Key, ShardState } from '../../base/types.js';
import type { Gate } from './bounded.js';
import { checkWeights, type HashOrder, idBytes, KEY_SEED, type KeyHash } from './order.js';

const SHARD_SEED = 0x72656e64;
const TWO_POW_32 = 4294967296;
/** The smallest weight, relative to the largest, whose scores stay meaningful. */
const MIN_RELATIVE_WEIGHT = 1e-300;

/**
 * Rendezvous, or highest-random-weight, hashing (Thaler & Ravishankar, "Using Name-Based Mappings
 * to Increase Hit Rates", IEEE/ACM ToN 1998): every shard scores the key, the highest score wins,
 * and the key's order of shards is simply the order of scores. A shard's score never depends on
 * the others, so a join takes keys only for itself and a leave hands out only its own keys.
 *
 * Weighted with the logarithmic method (Schindelhauer & Schomaker, "Weighted Distributed Hash
 * Tables", SPAA 2005; used by Ceph's straw2 and Envoy): score = −w / ln(h), h uniform in (0, 1),
 * which makes a shard's win probability exactly proportional to its weight. With equal weights
 * the order of h alone decides, so the logarithm is skipped.
 *
 * Weights are divided by the largest, so a score stays finite (−1e300 / ln h would overflow to
 * Infinity and tie); a weight below 1e-300 of the largest is refused, as its scores would round
 * to 0 and its keys go to whichever shard comes first.
 *
 * O(n) per pick: meant for tens of shards, or when the weights change often.
 */
export class Rendezvous implements HashOrder {
  private seeds = new Uint32Array(0);
  private weights = new Float64Array(0);
  private uniform = true;
  private n = 0;

  constructor(private readonly hash: KeyHash) {}

  build(shards: readonly ShardState[]): void {
    const n = shards.length;
    checkWeights(shards);
    let max = 0;
    for (const s of shards) max = Math.max(max, s.weight);
    const ids = idBytes(shards);
    const seeds = new Uint32Array(n);
    const weights = new Float64Array(n);
    let uniform = true;
    for (let i = 0; i < n; i++) {
      seeds[i] = this.hash(ids[i]!, SHARD_SEED) >>> 0;
      weights[i] = shards[i]!.weight / max;
      if (weights[i]! < MIN_RELATIVE_WEIGHT) {
        throw new ConfigError(
          `shards[${i}].weight`,
          `must be at least ${MIN_RELATIVE_WEIGHT} × the largest weight (${max}) under rendezvous hashing, whose scores cannot rank a smaller one`,
          shards[i]!.weight,
        );
      }
      if (shards[i]!.weight !== shards[0]!.weight) uniform = false;
    }
    this.seeds = seeds;
    this.weights = weights;
    this.uniform = uniform;
    this.n = n;
  }

  /** Expected shares: weight / Σ weight (the logarithmic method is exactly proportional). */
  shares(): Float64Array {
    let sum = 0;
    for (const w of this.weights) sum += w;
    return this.weights.map((w) => w / sum);
  }

  pick(key: Key, gate: Gate): number {
    const k = this.hash(key, KEY_SEED) >>> 0;
    const candidates = gate.candidates;
    const n = this.n;
    const seeds = this.seeds;
    // The common case — every shard offered, no load bound, equal weights — is a plain max over
    // the seeds, reading one ShardState: the winner's, which the walk below would pass over if its
    // in-flight figure is not below Infinity (NaN or Infinity, as only a standalone user can set).
    if (this.uniform && candidates.length === n && gate.limit === Number.POSITIVE_INFINITY) {
      let best = -1;
      let bestScore = -1;
      for (let i = 0; i < n; i++) {
        const h = mix(k, seeds[i]!);
        if (h > bestScore) {
          bestScore = h;
          best = i;
        }
      }
      if (best < 0 || candidates[best]!.inFlight < gate.limit) {
        gate.firstOffered = best;
        return best;
      }
    }
    // One pass over the offered shards: the best of all is the key's first offered choice, the
    // best under the load bound is the pick.
    let bestOffered = -1;
    let bestOfferedScore = Number.NEGATIVE_INFINITY;
    let best = -1;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let c = 0; c < candidates.length; c++) {
      const shard = candidates[c]!;
      const i = shard.index;
      if (i < 0 || i >= n) continue;
      const h = mix(k, seeds[i]!);
      const score = this.uniform ? h : -this.weights[i]! / Math.log((h + 0.5) / TWO_POW_32);
      if (score > bestOfferedScore) {
        bestOfferedScore = score;
        bestOffered = i;
      }
      if (score > bestScore && shard.inFlight < gate.limit) {
        bestScore = score;
        best = i;
      }
    }
    gate.firstOffered = bestOffered;
    return best;
  }
}

/**
 * A 32-bit hash of the pair (key hash, shard seed): two rounds of MurmurHash3's finalizer, so that
 * no simple relation between keys (such as k ^ k' = s ^ s') survives into the scores. Written out
 * here rather than calling `fmix32`, as it runs n times per pick.
 */
function mix(k: number, s: number): number {
  let h = k ^ s;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  h = ((h >>> 0) + s) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
