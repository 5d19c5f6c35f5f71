import type { Clock } from '../base/types.js';

/**
 * Load a shard reports about itself (e.g. an `x-shard-load` response header): trusted for `ttlMs`
 * after the last report, so a shard that stops reporting does not keep a stale figure forever.
 */
export class ReportedLoad {
  private value = 0;
  private atMs = Number.NEGATIVE_INFINITY;
  private readonly clock: Clock;
  private readonly ttlMs: number;

  constructor(clock: Clock, ttlMs = 10_000) {
    this.clock = clock;
    this.ttlMs = ttlMs;
  }

  report(value: number): void {
    this.value = value;
    this.atMs = this.clock.now();
  }

  /** The reported figure at time `nowMs`, 0 once stale. */
  currentAt(nowMs: number): number {
    return nowMs - this.atMs < this.ttlMs ? this.value : 0;
  }

  /** The last reported figure, if any. */
  get last(): number | undefined {
    return this.atMs === Number.NEGATIVE_INFINITY ? undefined : this.value;
  }
}
