/**
 * The retry budget of records retried one by one (after a partial failure): Finagle's
 * `RetryBudget`, as `retry/budget.ts` keeps it for runs, counted in records. A record may be sent
 * again when
 *
 *   records re-sent in the window + 1 ≤ ratio × records sent in the window + minPerSecond × ttlMs / 1000
 *
 * A batch deposits all its records in one call, so the cost is per batch, not per record.
 */

import type { Clock } from '../base/types.js';
import type { RetryBudgetOptions } from '../retry/budget.js';

const BUCKETS = 10;

export class RecordBudget {
  readonly #ratio: number;
  readonly #floor: number;
  readonly #bucketMs: number;
  readonly #clock: Clock;
  readonly #sent = new Float64Array(BUCKETS);
  readonly #resent = new Float64Array(BUCKETS);
  #index = 0;
  #bucketStart: number;
  #sentInWindow = 0;
  #resentInWindow = 0;

  constructor(options: Required<RetryBudgetOptions>, clock: Clock) {
    this.#ratio = options.ratio;
    this.#floor = (options.minPerSecond * options.ttlMs) / 1000;
    this.#bucketMs = options.ttlMs / BUCKETS;
    this.#clock = clock;
    this.#bucketStart = clock.now();
  }

  /** `count` records were sent for the first time: each earns `ratio` of a re-send. */
  deposit(count: number): void {
    this.#rotate();
    this.#sent[this.#index]! += count;
    this.#sentInWindow += count;
  }

  /** Takes one re-send if the budget allows. */
  tryWithdraw(): boolean {
    this.#rotate();
    if (this.#resentInWindow + 1 > this.#ratio * this.#sentInWindow + this.#floor) return false;
    this.#resent[this.#index]!++;
    this.#resentInWindow++;
    return true;
  }

  #rotate(): void {
    const now = this.#clock.now();
    const elapsed = Math.floor((now - this.#bucketStart) / this.#bucketMs);
    if (elapsed <= 0) return;
    const steps = Math.min(elapsed, BUCKETS);
    for (let s = 0; s < steps; s++) {
      this.#index = (this.#index + 1) % BUCKETS;
      this.#sentInWindow -= this.#sent[this.#index]!;
      this.#resentInWindow -= this.#resent[this.#index]!;
      this.#sent[this.#index] = 0;
      this.#resent[this.#index] = 0;
    }
    this.#bucketStart += elapsed * this.#bucketMs;
  }
}
