import { decay } from './ewma.js';

/**
 * Weight of one outcome in the failure-rate estimate: after four failures in a row the estimate
 * is 0.68, after ten 0.94, so a shard that fails fast loses its traffic within a handful of
 * requests; a success takes a quarter of it back.
 */
export const FAILURE_WEIGHT = 0.25;
/** The estimate is capped here, so a failing shard costs at most 100× its healthy price. */
export const MAX_FAILURE_RATE = 0.99;

/**
 * Failure accrual as load: how often a shard's recent attempts failed, folded into its cost and
 * load so that a shard which fails fast repels traffic instead of attracting it (a fast 500 looks
 * like a fast shard to latency alone). Linkerd treats failures as slow; Finagle's failure
 * accrual and undici's BalancedPool error penalty push a failing node down; here the factor is
 * the expected number of attempts per success, `1 / (1 − p)`.
 *
 * `p` is an exponentially weighted rate over outcomes (weight {@link FAILURE_WEIGHT} each) that
 * also decays towards 0 with time since the last outcome, like the Peak-EWMA latency (same time
 * constant): a shard the balancer stopped sending to is tried again after a while.
 */
export class FailureRate {
  private rate = 0;
  private stampMs = 0;

  constructor(private readonly decayMs: number) {}

  /** Feeds one outcome at time `nowMs`. */
  record(failed: boolean, nowMs: number): void {
    const p = this.valueAt(nowMs);
    this.rate = failed ? p + (1 - p) * FAILURE_WEIGHT : p * (1 - FAILURE_WEIGHT);
    this.stampMs = nowMs;
  }

  /** The failure rate at time `nowMs`, in [0, {@link MAX_FAILURE_RATE}]. */
  valueAt(nowMs: number): number {
    if (this.rate === 0) return 0;
    const elapsed = nowMs - this.stampMs;
    const p = elapsed <= 0 ? this.rate : this.rate * decay(elapsed / this.decayMs);
    return Math.min(p, MAX_FAILURE_RATE);
  }

  /** The cost multiplier at `nowMs`: expected attempts per success, `1 / (1 − p)`. */
  factorAt(nowMs: number): number {
    return 1 / (1 - this.valueAt(nowMs));
  }
}
