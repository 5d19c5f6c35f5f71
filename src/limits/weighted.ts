/**
 * Weights mean capacity: a fixed per-shard cap (`maxInFlightPerShard: n`, `fixed(n)` or the
 * default) is the cap of a shard of mean weight, and each shard's own cap scales with its weight,
 * `max(1, round(cap × weight / mean weight))`. At saturation every shard is full, whatever the
 * picker, and each completes work in proportion to its cap: a weight-2 shard takes twice the work
 * of a weight-1 shard, instead of every shard taking an equal share. The fleet's total stays about
 * `cap × n`, so adding a heavy shard lowers the others' caps a little.
 *
 * Equal weights keep the cap exactly as given (no arithmetic, no rounding). Adaptive limits
 * (`aimd()`, `gradient()`, a `ConcurrencyLimit` of your own) are not scaled: each already
 * measures its own shard's capacity, and scaling what it learned would count the weight twice.
 */

/** What the scaling reads of a shard. */
interface Weighted {
  readonly weight: number;
}

/**
 * Sets every shard's `limit` to its share of the fixed `cap` (see {@link weightedCap}), after a
 * membership or weight change: the caller then recounts which shards have room.
 */
export function weighCaps(shards: readonly (Weighted & { limit: number })[], cap: number): void {
  const mean = meanWeight(shards);
  for (const shard of shards) shard.limit = weightedCap(cap, shard.weight, mean);
}

/**
 * The mean weight of `shards`, or `undefined` when every shard has the same weight (or there are
 * none): then every cap is the cap as given.
 */
export function meanWeight(shards: readonly Weighted[]): number | undefined {
  const n = shards.length;
  if (n === 0) return undefined;
  const first = shards[0]!.weight;
  let sum = 0;
  let equal = true;
  for (let i = 0; i < n; i++) {
    const w = shards[i]!.weight;
    sum += w;
    if (w !== first) equal = false;
  }
  return equal ? undefined : sum / n;
}

/**
 * One shard's cap: `max(1, round(cap × weight / mean))`, or `cap` itself when `mean` is
 * undefined (equal weights). An infinite cap stays infinite.
 *
 * @example
 * weightedCap(16, 2, 1.25); // 26: weights 2/1/1/1 at a cap of 16 give 26/13/13/13
 */
export function weightedCap(cap: number, weight: number, mean: number | undefined): number {
  if (mean === undefined) return cap;
  return Math.max(1, Math.round((cap * weight) / mean));
}
