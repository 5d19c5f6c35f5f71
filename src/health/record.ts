/** Slices of the failure-rate window: it slides by a tenth of `failureWindowMs`. */
export const WINDOW_SLICES = 10;

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
  /** Balancer clock time the current (or last) ejection ends. */
  ejectedUntilMs = Number.NEGATIVE_INFINITY;
  /** The probe under way is an early one (asked for by keyed work waiting for the shard). */
  early = false;
  /**
   * The failure-rate window, sliding: attempts and failures of each of its last
   * {@link WINDOW_SLICES} slices (a ring, two counts a slice), the number of the current slice,
   * and the window's sums.
   */
  readonly slices = new Uint32Array(2 * WINDOW_SLICES);
  slice = Number.NEGATIVE_INFINITY;
  windowRequests = 0;
  windowFailures = 0;

  /** Empties the failure-rate window. */
  clearWindow(): void {
    this.slices.fill(0);
    this.slice = Number.NEGATIVE_INFINITY;
    this.windowRequests = 0;
    this.windowFailures = 0;
  }
}
