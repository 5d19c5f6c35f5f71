/**
 * Who may take work now: the one owner of that answer. A shard can be offered when it is a
 * member, has a free slot (below its cap; one probe at a time while probing) and is not ejected
 * — unless the fleet is in panic (too few healthy shards to trust ejection, Envoy's panic
 * threshold), which this room also keeps. Slots are taken and freed through it, and limits moved
 * through it, so the count of shards that cannot be offered (`blocked`, which lets a pick skip
 * the filtering when it is 0) is kept by the one room that changes what it counts — no caller
 * passes an availability it read before.
 */
import type { Shard } from '../load/shard.js';

/** Why a shard can take no attempt now. */
export type Unavailable = 'ejected' | 'pushback' | 'capped';

/** What availability reads of the fleet. */
export interface AvailabilityHost<T> {
  /** The live membership. */
  members(): readonly Shard<T>[];
  /** True when too few shards are healthy to trust ejection (the outlier detector says). */
  inPanic(): boolean;
  /** Panic began or ended. */
  panicChanged(active: boolean): void;
}

export class Availability<T> {
  /** Panic mode: ejection is ignored. Recomputed on every health or membership change. */
  panic = false;
  /** Members that cannot be offered now (at cap, or ejected outside panic). */
  blocked = 0;
  readonly #host: AvailabilityHost<T>;

  constructor(host: AvailabilityHost<T>) {
    this.#host = host;
  }

  /** `shard` can be offered to a pick now. */
  available(shard: Shard<T>): boolean {
    return !shard.removed && shard.hasRoom && (shard.health.state !== 'ejected' || this.panic);
  }

  /**
   * Why `shard` can take no attempt of a run that may use it alone (a keyed run's home) now, or
   * undefined when it can: ejected (outside panic, overall or within the run's rule —
   * `rulePanics`), pushing back at `nowMs`, or at its cap. A removed shard has no slot to give:
   * capped, as `available` says no to it too.
   */
  why(shard: Shard<T>, nowMs: number, rulePanics = false): Unavailable | undefined {
    if (shard.removed) return 'capped';
    if (shard.health.state === 'ejected' && !this.panic && !rulePanics) return 'ejected';
    if (shard.pushedBackAt(nowMs)) return 'pushback';
    return shard.hasRoom ? undefined : 'capped';
  }

  /**
   * An attempt takes a slot on `shard` (carrying `bytes`); true when it is the shard's probe.
   * Routing gave it the shard: a member with room, so it was available unless ejected outside
   * panic (a rule whose every shard is ejected may still use them) — no need to ask its room.
   */
  take(shard: Shard<T>, bytes: number): boolean {
    const was = shard.health.state !== 'ejected' || this.panic;
    const probe = shard.startAttempt(bytes);
    if (was && !shard.hasRoom) this.blocked++;
    return probe;
  }

  /**
   * An attempt frees its slot on `shard`. `before` runs first, while the slot is still taken —
   * an adaptive limit samples the in-flight count it ran at — and may move the shard's limit:
   * the slot and the limit change together, counted once.
   */
  free(shard: Shard<T>, bytes: number, probe: boolean, before?: () => void): void {
    const was = this.available(shard);
    before?.();
    shard.endAttempt(bytes, probe);
    this.#changed(shard, was);
  }

  /** Sets `shard`'s cap; true when it rose (waiting runs may go now). */
  setLimit(shard: Shard<T>, limit: number): boolean {
    const previous = shard.limit;
    if (limit === previous) return false;
    const was = this.available(shard);
    shard.limit = limit;
    this.#changed(shard, was);
    return limit > previous;
  }

  /** Health or membership changed: panic and the blocked count afresh. O(n); on changes only. */
  recount(): void {
    const panic = this.#host.inPanic();
    if (panic !== this.panic) {
      this.panic = panic;
      this.#host.panicChanged(panic);
    }
    let blocked = 0;
    for (const shard of this.#host.members()) if (!this.available(shard)) blocked++;
    this.blocked = blocked;
  }

  #changed(shard: Shard<T>, was: boolean): void {
    if (shard.removed) return;
    const now = this.available(shard);
    if (now !== was) this.blocked += now ? -1 : 1;
  }
}
