/** Health of one shard as the outlier detector sees it. */
export type HealthState = 'healthy' | 'ejected' | 'probing';

/**
 * What outlier detection remembers of one shard. It belongs to `health/`: the shard holds one so
 * the availability test on the pick path is a field read, but only the detector writes it.
 */
export class HealthRecord {
  state: HealthState = 'healthy';
  /** Failures in a row since the last success. */
  consecutiveFailures = 0;
  /** Times ejected in all. */
  ejections = 0;
  /** Ejections that count for the next one's length (reset after a long healthy spell). */
  level = 0;
  /** Balancer clock time of the last restoration. */
  restoredAtMs = Number.NEGATIVE_INFINITY;
  cancelTimer: (() => void) | undefined = undefined;
  /** Start of the current failure-rate window, and its counts. */
  windowStartMs = Number.NEGATIVE_INFINITY;
  windowRequests = 0;
  windowFailures = 0;
}
