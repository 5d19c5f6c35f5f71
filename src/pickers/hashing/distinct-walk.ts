import type { Gate } from './bounded.js';

/**
 * Walks a circular array of owners (ring points, Maglev slots) from `start`, asking `gate` about
 * each distinct owner once, in the key's own order — the fallback when the first owner was
 * skipped (ejected, capped, excluded, or over its bounded load). Seen owners are stamped with a
 * per-walk epoch, so a walk allocates nothing and never clears the marks.
 */
export class DistinctWalk {
  private seen = new Uint32Array(0);
  private epoch = 0;

  /** Makes room for `n` owners (called from rebuild). */
  resize(n: number): void {
    if (this.seen.length < n) this.seen = new Uint32Array(n);
  }

  /**
   * The first owner after `first` (found at `start`) that `gate` accepts, among `owners` holding
   * `distinct` owners in all; -1 when none does. An owner is `owners[k] & mask` (the ring packs
   * point bits above its owners; a Maglev table passes −1).
   */
  next(
    owners: Int32Array | Uint32Array | Uint16Array,
    mask: number,
    start: number,
    first: number,
    distinct: number,
    gate: Gate,
  ): number {
    const seen = this.seen;
    if (this.epoch === 0xffffffff) {
      seen.fill(0);
      this.epoch = 0;
    }
    const epoch = ++this.epoch;
    seen[first] = epoch;
    const total = owners.length;
    let found = 1;
    let k = start;
    for (let step = 1; step < total && found < distinct; step++) {
      if (++k === total) k = 0;
      const owner = owners[k]! & mask;
      if (seen[owner] === epoch) continue;
      seen[owner] = epoch;
      found++;
      if (gate.accepts(owner)) return owner;
    }
    return -1;
  }
}
