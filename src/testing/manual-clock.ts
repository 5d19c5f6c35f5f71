import { ConfigError } from '../base/errors.js';
import type { Clock } from '../base/types.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A virtual clock for tests: time moves only when `advance()` is called, and timers fire in
 * time order (ties in the order they were set), each seeing `now()` equal to its due time.
 *
 * @example
 * const clock = new ManualClock();
 * const balancer = new Balancer({ shards, clock, random: seededRandom(1) });
 * clock.advance(30_000); // ejections expire, backoffs fire, timeouts trip
 */
export class ManualClock implements Clock {
  private time: number;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(startMs = 0) {
    this.time = finiteMs('startMs', startMs);
  }

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): () => void {
    if (typeof fn !== 'function') throw new ConfigError('setTimer fn', 'must be a function', fn);
    // NaN would sort nowhere: every timer set after it could be passed over by `advance()`.
    if (typeof ms !== 'number' || Number.isNaN(ms)) {
      throw new ConfigError('setTimer ms', 'must be a number of ms', ms);
    }
    const timer: Timer = { at: this.time + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    // Keep sorted by (at, seq): binary search for the first timer due later than this one.
    let lo = 0;
    let hi = this.timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.timers[mid]!.at > timer.at) hi = mid;
      else lo = mid + 1;
    }
    this.timers.splice(lo, 0, timer);
    return () => {
      timer.cancelled = true;
    };
  }

  /** Number of timers still due to fire. */
  get pendingTimers(): number {
    let n = 0;
    for (const t of this.timers) if (!t.cancelled) n++;
    return n;
  }

  /** Due time of the earliest live timer, or undefined. */
  nextTimerAt(): number | undefined {
    for (const t of this.timers) if (!t.cancelled) return t.at;
    return undefined;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  advance(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new ConfigError('ms', 'must be a finite number ≥ 0 (time only moves forward)', ms);
    }
    this.advanceTo(this.time + ms);
  }

  /** Moves time to `targetMs` (never backwards), firing due timers in order. */
  advanceTo(targetMs: number): void {
    finiteMs('targetMs', targetMs);
    for (;;) {
      const next = this.timers[0];
      if (next === undefined || next.at > targetMs) break;
      this.timers.shift();
      if (next.cancelled) continue;
      if (next.at > this.time) this.time = next.at;
      next.fn();
    }
    if (targetMs > this.time) this.time = targetMs;
  }

  /** Fires the next live timer, moving time to it; false when none is left. */
  runNext(): boolean {
    for (;;) {
      const next = this.timers.shift();
      if (next === undefined) return false;
      if (next.cancelled) continue;
      if (next.at > this.time) this.time = next.at;
      next.fn();
      return true;
    }
  }
}

/** A time on the clock: a finite number (NaN would fire every timer: nothing is later than it). */
function finiteMs(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ConfigError(field, 'must be a finite number of ms', value);
  }
  return value;
}
