import { checkKnownKeys, checkObject, inRange, positiveFinite, positiveInt } from '../validate.js';
import { checkBounds } from './aimd.js';
import type { ConcurrencyLimit, LimitFactory, LimitSample } from './types.js';

/** Options of {@link gradient}. */
export interface GradientOptions {
  /** Starting limit (default 20). */
  initial?: number;
  /** Floor (default 1). */
  min?: number;
  /** Ceiling (default 200). */
  max?: number;
  /** Weight of a new limit against the old, in (0, 1] (default 0.2). */
  smoothing?: number;
  /** Samples the long-term RTT baseline averages over (default 600). */
  longWindow?: number;
  /** How much slower than the baseline the short-term RTT may be before the limit shrinks (default 1.5). */
  tolerance?: number;
  /** Head-room added each sample so the limit can grow and probe (default 4). */
  queueSize?: number;
}

export const GRADIENT_DEFAULTS: Required<GradientOptions> = {
  initial: 20,
  min: 1,
  max: 200,
  smoothing: 0.2,
  longWindow: 600,
  tolerance: 1.5,
  queueSize: 4,
};

/**
 * Latency-based limit after Netflix's Gradient2: a long-term RTT baseline (an EWMA over
 * `longWindow` samples) against the latest RTT. gradient = clamp(tolerance × long / short, 0.5, 1);
 * new = limit × gradient + queueSize, smoothed by `smoothing`. When latency rises above the
 * tolerated baseline the limit shrinks; while it holds, the limit grows by the queue head-room.
 * It does not grow while the limit is not in use (in-flight under half of it), and a drop
 * (timeout, push-back, failure) targets half the limit with no head-room. When the baseline drifts
 * far above the short RTT (a recovered shard), it decays towards it so the limit can recover.
 *
 * One departure from Gradient2: while the limit is in use, the baseline learns only from samples
 * at or below it (the RTT without our own queue); a slower one may be the limit's own queue, and
 * learning it lets the baseline climb with the queue until the limit reaches `max`. So a shard
 * that serves `c` calls at once in time `s` settles at limit ≈ tolerance × c + queueSize
 * (defaults: 1.5 c + 4, an RTT of ≈ (1.5 + 4 / c) × s). The price: a lasting rise in service
 * time that is not queueing (larger payloads, a slower disk) is learnt only from samples taken
 * while the limit is not in use; until then the limit holds at queueSize / (1 − gradient), at
 * least 2 × queueSize (the gradient's floor of 0.5).
 */
export class GradientLimit implements ConcurrencyLimit {
  private value: number;
  private longRtt = 0;
  private samples = 0;
  private readonly o: Required<GradientOptions>;

  constructor(options: Required<GradientOptions>) {
    this.o = options;
    this.value = options.initial;
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
      // The baseline is the RTT without our own queue: it learns from samples at or below it,
      // and from any sample taken while the limit was not in use. Fed every sample (as Gradient2
      // is), it climbs with the queue of a shard that stays full, the gradient returns to 1 and
      // the limit grows by `queueSize` a sample up to `max`: a shard whose capacity halved kept
      // ~60 calls in flight against 4 served at once (test/limits/simulated.test.ts). Fed the
      // samples within `tolerance` of it, it still ratchets up, more slowly.
      const factor = 2 / (Math.min(this.samples, o.longWindow) + 1);
      this.longRtt = this.longRtt * (1 - factor) + shortRtt * factor;
    }
    if (this.longRtt / shortRtt > 2) this.longRtt *= 0.95;
    if (!dropped && appLimited) return;
    // A drop halves the target and grants no head-room: loss means the shard is past its limit.
    const target = dropped
      ? this.value * 0.5
      : this.value * Math.max(0.5, Math.min(1, (o.tolerance * this.longRtt) / shortRtt)) +
        o.queueSize;
    const next = this.value * (1 - o.smoothing) + target * o.smoothing;
    this.value = Math.min(o.max, Math.max(o.min, next));
  }
}

/**
 * A factory of {@link GradientLimit}s, one per shard.
 *
 * @example
 * new Balancer({ shards, maxInFlightPerShard: gradient({ max: 64 }) });
 */
export function gradient(options: GradientOptions = {}): LimitFactory {
  checkObject('gradient options', options);
  checkKnownKeys('gradient', options, Object.keys(GRADIENT_DEFAULTS));
  const o = { ...GRADIENT_DEFAULTS };
  if (options.initial !== undefined) o.initial = positiveInt('gradient.initial', options.initial);
  if (options.min !== undefined) o.min = positiveInt('gradient.min', options.min);
  if (options.max !== undefined) o.max = positiveInt('gradient.max', options.max);
  if (options.smoothing !== undefined)
    o.smoothing = inRange('gradient.smoothing', options.smoothing, 0.001, 1);
  if (options.longWindow !== undefined)
    o.longWindow = positiveInt('gradient.longWindow', options.longWindow);
  if (options.tolerance !== undefined) {
    o.tolerance = positiveFinite('gradient.tolerance', options.tolerance);
  }
  if (options.queueSize !== undefined)
    o.queueSize = inRange('gradient.queueSize', options.queueSize, 0, 1e6);
  checkBounds('gradient', o.initial, o.min, o.max);
  return () => new GradientLimit(o);
}
