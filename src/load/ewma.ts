import type { Clock, EwmaOptions } from '../base/types.js';

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
  /**
   * [estimate ms (−1 before the first sample), time of the last sample, default estimate]. A
   * typed array so every read is a double: a field that held the integer default for some shards
   * and fractions for others made V8 box the value on each read (an allocation per pick).
   */
  private readonly state = new Float64Array(3);

  constructor(clock: Clock, options: EwmaOptions = {}) {
    this.clock = clock;
    this.decayMs = options.decayMs ?? DEFAULT_DECAY_MS;
    this.defaultRttMs = options.defaultRttMs ?? DEFAULT_RTT_MS;
    this.state[0] = -1;
    this.state[2] = this.defaultRttMs;
  }

  /** Feeds one round-trip sample, in ms. */
  observe(rttMs: number): void {
    this.observeAt(rttMs, this.clock.now());
  }

  /**
   * Feeds one sample taken at time `nowMs` (a caller that has read the clock saves a read). A
   * time before the last sample's (a clock that stepped back) blends nothing and keeps the last
   * time: a negative Δt would weigh the old estimate by e^(|Δt| / decay).
   */
  observeAt(rttMs: number, now: number): void {
    const state = this.state;
    const estimate = state[0]!;
    const elapsed = now - state[1]!;
    if (estimate < 0 || rttMs > estimate) {
      state[0] = rttMs;
    } else if (elapsed > 0) {
      const w = decay(elapsed / this.decayMs);
      state[0] = estimate * w + rttMs * (1 - w);
    }
    if (elapsed > 0 || estimate < 0) state[1] = now;
  }

  /**
   * Evidence without a latency (a fast failure): the estimate stays as the last sample set it,
   * and decays from now, not from that sample. Before the first sample, nothing changes.
   */
  hold(now: number): void {
    const state = this.state;
    if (state[0]! >= 0 && now > state[1]!) state[1] = now;
  }

  /** The estimate now, in ms: the last value decayed by the time since it was set. */
  get valueMs(): number {
    return this.valueAt(this.clock.now());
  }

  /** The estimate at time `nowMs` (callers that read several figures read the clock once). */
  valueAt(nowMs: number): number {
    const state = this.state;
    const estimate = state[0]!;
    if (estimate < 0) return state[2]!;
    const elapsed = nowMs - state[1]!;
    return elapsed <= 0 ? estimate : estimate * decay(elapsed / this.decayMs);
  }

  /** True once a sample has been seen. */
  get sampled(): boolean {
    return this.state[0]! >= 0;
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
