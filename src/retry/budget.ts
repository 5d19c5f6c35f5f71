import { ConfigError } from '../base/errors.js';
import type { Clock } from '../base/types.js';
import { checkKnownKeys, checkObject, duration, inRange } from '../base/validate.js';

/** Finagle-style retry budget. */
export interface RetryBudgetOptions {
  /** Retries allowed per run started in the window (default 0.2). */
  ratio?: number;
  /** Retries allowed per second regardless of traffic, so a quiet balancer can still retry (default 10). */
  minPerSecond?: number;
  /** The window, ms (default 10 000). */
  ttlMs?: number;
}

export const BUDGET_DEFAULTS: Required<RetryBudgetOptions> = {
  ratio: 0.2,
  minPerSecond: 10,
  ttlMs: 10_000,
};

/** Checks a budget given at `field` (`retry.budget`, or `ingest.batch.retry.budget`). */
export function resolveBudgetOptions(
  value: unknown,
  field = 'retry.budget',
): Required<RetryBudgetOptions> {
  if (value === undefined) return BUDGET_DEFAULTS;
  checkObject(field, value);
  checkKnownKeys(field, value, Object.keys(BUDGET_DEFAULTS));
  const v = value as RetryBudgetOptions;
  return {
    ratio: v.ratio === undefined ? BUDGET_DEFAULTS.ratio : inRange(`${field}.ratio`, v.ratio, 0, 1),
    minPerSecond:
      v.minPerSecond === undefined
        ? BUDGET_DEFAULTS.minPerSecond
        : rate(`${field}.minPerSecond`, v.minPerSecond),
    ttlMs:
      v.ttlMs === undefined ? BUDGET_DEFAULTS.ttlMs : duration(`${field}.ttlMs`, v.ttlMs, true),
  };
}

const BUCKETS = 10;
/** Slack for binary rounding in the budget's product and floor (far below one retry). */
const ROUNDING = 1e-6;

/**
 * Keeps retries from amplifying an outage (Finagle `RetryBudget`). A retry may start when
 *
 *   retries started in the window + 1 ≤ ratio × runs started in the window + minPerSecond × ttlMs / 1000
 *
 * The window is the last `ttlMs`, counted in 10 buckets of `ttlMs / 10` (the current, partly
 * filled bucket included), so memory and time per call are constant.
 */
export class RetryBudget {
  private readonly ratio: number;
  private readonly floor: number;
  private readonly bucketMs: number;
  private readonly clock: Clock;
  private readonly runs = new Float64Array(BUCKETS);
  private readonly retries = new Float64Array(BUCKETS);
  private bucketIndex = 0;
  private bucketStart: number;
  private runsInWindow = 0;
  private retriesInWindow = 0;

  constructor(options: Required<RetryBudgetOptions>, clock: Clock) {
    this.ratio = options.ratio;
    this.floor = (options.minPerSecond * options.ttlMs) / 1000;
    this.bucketMs = options.ttlMs / BUCKETS;
    this.clock = clock;
    this.bucketStart = clock.now();
  }

  /** A run started: it earns `ratio` of a retry. */
  deposit(nowMs: number = this.clock.now()): void {
    this.rotate(nowMs);
    this.runs[this.bucketIndex]!++;
    this.runsInWindow++;
  }

  /** Takes one retry if the budget allows; false means retrying now would amplify load. */
  tryWithdraw(): boolean {
    this.rotate(this.clock.now());
    // Counts are whole: a budget within ROUNDING of the next retry is that retry (0.29 × 100 is
    // 28.999999999999996 in binary floating point, and allows 29).
    const allowed = this.ratio * this.runsInWindow + this.floor + ROUNDING;
    if (this.retriesInWindow + 1 > allowed) return false;
    this.retries[this.bucketIndex]!++;
    this.retriesInWindow++;
    return true;
  }

  private rotate(now: number): void {
    let steps = Math.floor((now - this.bucketStart) / this.bucketMs);
    if (steps <= 0) return;
    if (steps > BUCKETS) steps = BUCKETS;
    for (let s = 0; s < steps; s++) {
      this.bucketIndex = (this.bucketIndex + 1) % BUCKETS;
      this.runsInWindow -= this.runs[this.bucketIndex]!;
      this.retriesInWindow -= this.retries[this.bucketIndex]!;
      this.runs[this.bucketIndex] = 0;
      this.retries[this.bucketIndex] = 0;
    }
    this.bucketStart += Math.floor((now - this.bucketStart) / this.bucketMs) * this.bucketMs;
  }
}

/** A number of retries per second: finite and ≥ 0. */
function rate(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ConfigError(field, 'must be a finite number ≥ 0 (retries per second)', value);
  }
  return value;
}
