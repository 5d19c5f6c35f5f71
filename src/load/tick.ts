import type { Clock } from '../base/types.js';

/**
 * The clock the load figures read. During a pick the balancer reads the real clock once and
 * `freeze`s it here, so a Peak-EWMA pick reads no clock per shard; at any other time `now()` is
 * the real clock, so a figure read from outside is exact. A plain class (no closure, no private
 * fields) so the shard's getters inline it.
 */
export class TickClock implements Clock {
  /** The time frozen for the pick under way; meaningful while `frozen`. */
  tick = 0;
  frozen = false;
  private readonly base: Clock;

  constructor(base: Clock) {
    this.base = base;
  }

  now(): number {
    return this.frozen ? this.tick : this.base.now();
  }

  setTimer(fn: () => void, ms: number, background?: boolean): () => void {
    return this.base.setTimer(fn, ms, background);
  }
}
