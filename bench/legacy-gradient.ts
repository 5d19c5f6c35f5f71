/**
 * The gradient limit as it was before its defaults were fixed (commit b4ed5e4), kept only so that
 * bench/adaptive.bench.ts can print the old defaults beside the new ones in the same run. Its
 * update, per sample: a baseline that learns from samples at or below it (or while the limit is
 * not in use), gradient = clamp(tolerance × baseline / rtt, 0.5, 1), limit ← limit × gradient +
 * queueSize, smoothed by `smoothing`. Not part of the library.
 */
import type { ConcurrencyLimit, LimitFactory, LimitSample } from '../src/index.js';

export interface LegacyGradientOptions {
  initial: number;
  min: number;
  max: number;
  smoothing: number;
  longWindow: number;
  tolerance: number;
  queueSize: number;
}

/** The old defaults: Netflix Gradient2's, with `min` 1. */
export const LEGACY_DEFAULTS: LegacyGradientOptions = {
  initial: 20,
  min: 1,
  max: 200,
  smoothing: 0.2,
  longWindow: 600,
  tolerance: 1.5,
  queueSize: 4,
};

class LegacyGradientLimit implements ConcurrencyLimit {
  private value: number;
  private longRtt = 0;
  private samples = 0;

  constructor(private readonly o: LegacyGradientOptions) {
    this.value = o.initial;
  }

  get limit(): number {
    return Math.floor(this.value);
  }

  onSample({ rttMs, inFlight, dropped }: LimitSample): void {
    const o = this.o;
    const shortRtt = Math.max(rttMs, 1e-3);
    const appLimited = inFlight * 2 < this.value;
    this.samples++;
    if (this.samples === 1) this.longRtt = shortRtt;
    else if (appLimited || shortRtt <= this.longRtt) {
      const factor = 2 / (Math.min(this.samples, o.longWindow) + 1);
      this.longRtt = this.longRtt * (1 - factor) + shortRtt * factor;
    }
    if (this.longRtt / shortRtt > 2) this.longRtt *= 0.95;
    if (!dropped && appLimited) return;
    const target = dropped
      ? this.value * 0.5
      : this.value * Math.max(0.5, Math.min(1, (o.tolerance * this.longRtt) / shortRtt)) +
        o.queueSize;
    const next = this.value * (1 - o.smoothing) + target * o.smoothing;
    this.value = Math.min(o.max, Math.max(o.min, next));
  }
}

/** A factory of the old limit; `options` override the old defaults. */
export function legacyGradient(options: Partial<LegacyGradientOptions> = {}): LimitFactory {
  const o = { ...LEGACY_DEFAULTS, ...options };
  return () => new LegacyGradientLimit(o);
}
