import type { Clock, EwmaOptions } from '../types.js';

export const DEFAULT_DECAY_MS = 10_000;
export const DEFAULT_RTT_MS = 30;

/**
 * Peak-EWMA round-trip estimator (Finagle `PeakEwma`, Linkerd, tower `load::PeakEwma`).
 *
 * On each sample, with `w = exp(-Δt / decayMs)` and Δt the time since the previous sample:
 * `est = sample > est ? sample : est·w + sample·(1 − w)`. A rise is taken at once (the peak),
 * a fall is smoothed. Reads decay the estimate towards zero by the time since the last sample,
 * so an idle shard is tried again. Before the first sample the estimate is `defaultRttMs`.
 */
export class PeakEwma {
  readonly decayMs: number;
  readonly defaultRttMs: number;
  private readonly clock: Clock;
  private estimateMs = -1;
  private stampMs = 0;

  constructor(clock: Clock, options: EwmaOptions = {}) {
    this.clock = clock;
    this.decayMs = options.decayMs ?? DEFAULT_DECAY_MS;
    this.defaultRttMs = options.defaultRttMs ?? DEFAULT_RTT_MS;
  }

  /** Feeds one round-trip sample, in ms. */
  observe(rttMs: number): void {
    const now = this.clock.now();
    if (this.estimateMs < 0) {
      this.estimateMs = rttMs;
    } else if (rttMs > this.estimateMs) {
      this.estimateMs = rttMs;
    } else {
      const w = decay((now - this.stampMs) / this.decayMs);
      this.estimateMs = this.estimateMs * w + rttMs * (1 - w);
    }
    this.stampMs = now;
  }

  /** The estimate now, in ms: the last value decayed by the time since it was set. */
  get valueMs(): number {
    return this.valueAt(this.clock.now());
  }

  /** The estimate at time `nowMs` (callers that read several figures read the clock once). */
  valueAt(nowMs: number): number {
    if (this.estimateMs < 0) return this.defaultRttMs;
    const elapsed = nowMs - this.stampMs;
    return elapsed <= 0 ? this.estimateMs : this.estimateMs * decay(elapsed / this.decayMs);
  }

  /** True once a sample has been seen. */
  get sampled(): boolean {
    return this.estimateMs >= 0;
  }
}

/**
 * exp(−x) for x ≥ 0. Reads happen on every pick, usually milliseconds after the last sample
 * against a 10 s decay (x < 0.05): there a 5-term Taylor series is within 3·10⁻⁹ of the exact
 * value (relative) and several times cheaper than `Math.exp`.
 */
export function decay(x: number): number {
  if (x < 0.05) return 1 - x * (1 - x * (0.5 - x * (1 / 6 - x / 24)));
  return Math.exp(-x);
}
