/** One observation a concurrency limit learns from: an attempt that just ended. */
export interface LimitSample {
  /** The attempt's round trip, ms. */
  rttMs: number;
  /** Calls the shard had outstanding when the attempt ended (itself included). */
  inFlight: number;
  /** The attempt was dropped: timed out, pushed back, or failed as the shard's fault. */
  dropped: boolean;
}

/**
 * A per-shard concurrency limit: the current cap, and what it learns from each ended attempt.
 * Each shard has its own instance (give the balancer a factory, such as `aimd()`).
 *
 * @example
 * const halfOpen: ConcurrencyLimit = { limit: 4, onSample: ({ dropped }) => {} };
 */
export interface ConcurrencyLimit {
  /** The current cap: the shard is offered while its in-flight count is below it. */
  readonly limit: number;
  onSample(sample: LimitSample): void;
}

/** Makes one `ConcurrencyLimit` per shard. */
export type LimitFactory = () => ConcurrencyLimit;
