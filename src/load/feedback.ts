/**
 * What an ended attempt teaches: its latency and outcome feed the shard's load figures (`load/`),
 * its adaptive limit (`limits/`) and its health record (`health/`). The balancer measures, the
 * pickers decide (tower's `Load`, Finagle's failure accrual): this is the one place that writes
 * a shard's figures after an attempt.
 */
import { rethrowLater } from '../base/callbacks.js';
import {
  BalancerClosedError,
  PushBackError,
  ShardRemovedError,
  TimeoutError,
} from '../base/errors.js';
import type { HealthUpdate, OutlierDetector } from '../health/outlier.js';
import type { Shard } from './shard.js';

/**
 * What an ended attempt changed beyond the shard's own figures, for the dispatcher to act on
 * once its step is done — never a call back into it while it is still ending the attempt.
 */
export interface AttemptChanges {
  /** The shard's adaptive limit moved (from `previous`). */
  limit: { limit: number; previous: number } | undefined;
  /** The shard pushed back: routing spares it until `shard.pushBack.untilMs`. */
  pushedBack: boolean;
  /** The shard was ejected or restored. */
  health: HealthUpdate | undefined;
}

export class Feedback<T> {
  constructor(
    /** The retry classifier: whether another shard may do better (and so, whether this one is at fault). */
    private readonly classify: (error: unknown) => boolean,
    private readonly outliers: OutlierDetector<Shard<T>> | undefined,
  ) {}

  /**
   * True when `error` is worth another shard (what the retry decision starts from), by the run's
   * own `retry.retryable` when it has one.
   */
  retryable(error: unknown, own?: { retryable: (error: unknown) => boolean } | false): boolean {
    try {
      return own === undefined || own === false ? this.classify(error) : own.retryable(error);
    } catch (thrown) {
      // A classifier that throws says nothing: the attempt's error is not retried.
      rethrowLater(thrown);
      return false;
    }
  }

  /**
   * Feeds the adaptive limit one sample, before the attempt's slot is freed (the limit reads the
   * in-flight count it ran at). `dropped`: a timeout, push-back or fault — the limit backs off.
   * Returns how the limit moved, if it did.
   */
  sample(
    shard: Shard<T>,
    rttMs: number,
    dropped: boolean,
  ): { limit: number; previous: number } | undefined {
    const limiter = shard.limiter;
    if (limiter === undefined) return undefined;
    let next: number;
    try {
      limiter.onSample({ rttMs, inFlight: shard.count, dropped });
      next = Math.max(1, Math.floor(limiter.limit));
    } catch (thrown) {
      // A limit that throws keeps the cap it had.
      rethrowLater(thrown);
      return undefined;
    }
    // A limit that turns NaN (or not a number) keeps the cap it had: a NaN cap would offer the
    // shard to no run again, and every run waiting on it would hang.
    if (next === shard.limit || Number.isNaN(next)) return undefined;
    const previous = shard.limit;
    shard.limit = next;
    return { limit: next, previous };
  }

  /**
   * The attempt succeeded after `latencyMs` (−1: unknown, the clock stepped back during it).
   * Returns the restoration it made (a probe that succeeded), if any.
   */
  succeeded(
    shard: Shard<T>,
    latencyMs: number,
    nowMs: number,
    probe: boolean,
  ): HealthUpdate | undefined {
    shard.successes++;
    if (latencyMs >= 0) shard.ewma.observeAt(latencyMs, nowMs);
    shard.recordOutcome(false, nowMs);
    return this.outliers?.onSuccess(shard, nowMs, probe);
  }

  /**
   * The attempt failed with `error` after `latencyMs`. Push-back is load, not ill health: the
   * shard's cost rises for the advised time. A fault of the shard counts against its cost and
   * its health; it is never a fast latency sample (a fast 500 must not look like a fast shard),
   * while a slow one (a timeout) raises the estimate like any peak. A fast one holds the
   * estimate where its last sample left it: otherwise it would decay from the last success while
   * the shard kept failing, and after ~ln(100) decays (46 s at 10 s) even the 100× failure factor
   * would price it below the healthy shards. Returns the ejection it made, if any (a push-back
   * the caller knows from the error).
   */
  failed(
    shard: Shard<T>,
    error: unknown,
    retryable: boolean,
    latencyMs: number,
    nowMs: number,
    probe: boolean,
  ): HealthUpdate | undefined {
    if (error instanceof PushBackError) {
      shard.holdPushBack(error.retryAfterMs);
      return undefined;
    }
    shard.failures++;
    if (!isShardFault(error, retryable)) return undefined;
    if (latencyMs > shard.ewma.valueAt(nowMs)) shard.ewma.observeAt(latencyMs, nowMs);
    else shard.ewma.hold(nowMs);
    shard.recordOutcome(true, nowMs);
    return this.outliers?.onFailure(shard, nowMs, probe);
  }

  /**
   * A failure that tells an adaptive limit to back off: a timeout (whatever the classifier says
   * of it), push-back, or the shard's fault.
   */
  drops(error: unknown, retryable: boolean): boolean {
    return (
      error instanceof TimeoutError ||
      error instanceof PushBackError ||
      isShardFault(error, retryable)
    );
  }
}

/** A failure that counts against the shard: retryable, and not of our own making. */
function isShardFault(error: unknown, retryable: boolean): boolean {
  return (
    retryable &&
    !(error instanceof PushBackError) &&
    !(error instanceof ShardRemovedError) &&
    !(error instanceof BalancerClosedError)
  );
}
