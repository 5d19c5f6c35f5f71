import type { Clock } from '../base/types.js';

/**
 * Added to a shard's load and cost while it pushes back, so it is chosen only when every other
 * candidate pushes back too (then the real figures still order them).
 */
export const PUSH_BACK_PENALTY = 1e9;

/** Remembers until when a shard asked to be spared (429, SlowDown, Retry-After). */
export class PushBack {
  private until = Number.NEGATIVE_INFINITY;
  private readonly clock: Clock;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** The shard asked for `ms` of relief from now; the later of two requests wins. */
  hold(ms: number): void {
    const until = this.clock.now() + ms;
    if (until > this.until) this.until = until;
  }

  /** Balancer clock time until which the shard asked to be spared (−Infinity: never). */
  get untilMs(): number {
    return this.until;
  }

  /** The penalty at time `nowMs`. */
  penaltyAt(nowMs: number): number {
    return nowMs < this.until ? PUSH_BACK_PENALTY : 0;
  }
}
