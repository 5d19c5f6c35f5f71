import type { ShardState } from '../../base/types.js';

/**
 * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam, "Consistent Hashing
 * with Bounded Loads", SODA 2018): no shard may hold more than `ceil(c × (total + 1) / n)` in
 * flight, so a hot key cannot pile onto one shard; past the bound the key moves to the next
 * shard of its own hashing order. Because the bound sums to more than the total, some shard is
 * always under it, and with c = 1.25 few keys ever move.
 */

/** The most a shard may hold in flight before a new pick skips it. */
export function loadBound(c: number, totalInFlight: number, n: number): number {
  return Math.ceil((c * (totalInFlight + 1)) / n);
}

/**
 * What a hashing order asks of each shard it walks to: is it offered for this pick, and is it
 * under the load bound? Offered-ness is an O(1) test by membership index — a picker-owned stamp
 * array and a per-pick epoch when only part of the membership is offered, so nothing is written
 * to `ShardState` and nothing is allocated per pick.
 */
export class Gate {
  /** The shards offered for this pick. */
  candidates: readonly ShardState[] = [];
  /** Shards at or above this many in flight are skipped (Infinity: bounded load off). */
  limit = Number.POSITIVE_INFINITY;
  /** Membership index of the key's first offered shard in its order, or −1. */
  firstOffered = -1;

  private all = true;
  private epoch = 0;
  private stamp = new Uint32Array(0);
  private slot = new Int32Array(0);

  /** Starts a pick among `candidates` out of a membership of `n`. */
  begin(candidates: readonly ShardState[], n: number, limit: number): void {
    this.candidates = candidates;
    this.limit = limit;
    this.firstOffered = -1;
    // Offered shards are a subset of the membership in its order: same size means same shards.
    this.all = candidates.length === n;
    if (this.all) return;
    if (this.stamp.length !== n) {
      this.stamp = new Uint32Array(n);
      this.slot = new Int32Array(n);
      this.epoch = 0;
    }
    if (this.epoch === 0xffffffff) {
      this.stamp.fill(0);
      this.epoch = 0;
    }
    const epoch = ++this.epoch;
    for (let k = 0; k < candidates.length; k++) {
      const i = candidates[k]!.index;
      if (i >= 0 && i < n) {
        this.stamp[i] = epoch;
        this.slot[i] = k;
      }
    }
  }

  /** The offered shard with membership index `i`, or undefined. */
  offered(i: number): ShardState | undefined {
    if (this.all) return this.candidates[i];
    return this.stamp[i] === this.epoch ? this.candidates[this.slot[i]!] : undefined;
  }

  /**
   * True when shard `i` is offered and under the bound. Call it in the key's order: the first
   * offered shard is remembered, to count spills and to fall back on (asking again is harmless).
   */
  accepts(i: number): boolean {
    const shard = this.offered(i);
    if (shard === undefined) return false;
    if (this.firstOffered < 0) this.firstOffered = i;
    return shard.inFlight < this.limit;
  }
}
