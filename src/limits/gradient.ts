import { checkKnownKeys, checkObject, inRange, positiveInt } from '../base/validate.js';
import { checkBounds } from './aimd.js';
import type { ConcurrencyLimit, LimitFactory, LimitSample } from './types.js';

/** Options of {@link gradient}. Every default is explained in docs/adaptive-limits.md. */
export interface GradientOptions {
  /** Starting limit (default 4). It doubles while the shard is kept full and shows no queue. */
  initial?: number;
  /** Floor (default 1). */
  min?: number;
  /** Ceiling (default 200). */
  max?: number;
  /** Weight of a new estimate against the old, in (0, 1] (default 1: windows already average). */
  smoothing?: number;
  /** Samples the no-queue RTT baseline averages over (default 100). */
  longWindow?: number;
  /**
   * How much slower than the baseline a window's mean RTT may be before it counts as a queue
   * (default 1.1; from 1 to 10, and a rise under 5 % never counts). A shard settles between its
   * capacity and `tolerance ×` its capacity.
   */
  tolerance?: number;
  /** Calls a probe asks for above the estimate, at least (default 1; a probe asks for ≥ 10 %). */
  queueSize?: number;
}

export const GRADIENT_DEFAULTS: Required<GradientOptions> = {
  initial: 4,
  min: 1,
  max: 200,
  smoothing: 1,
  longWindow: 100,
  tolerance: 1.1,
  queueSize: 1,
};

/**
 * A probe asks for this much more than the estimate (and a call more at least). 10 %: a shard
 * reached over a network fills only past capacity × (service + transit) ÷ service calls — 1.14 ×
 * on loopback — so the estimate rests up to there, and a probe above it must stay within 1.3 ×.
 */
const PROBE_GAIN = 1.1;
/**
 * A measuring window runs at least one call, and this far under the estimate ÷ `tolerance`, below
 * it (0.9 at the default tolerance 1.1): below the knee, and within 30 % of the estimate.
 */
const MEASURE_GAIN = 0.99;
/** A probe that found the edge lowers the estimate to it, by at most this factor at once. */
const EDGE_STEP = 0.9;
/**
 * A probe is past the edge when its RTT rose by this share of its step, at least. Past the edge
 * the share is 1 (less a client's fixed costs, ≈ 0.9 on loopback); a probe from just below the
 * edge shows part of it, and the estimate then rises only to limit ÷ (1 + rise).
 */
const EDGE_SLOPE = 0.5;
/** The least step a probe is judged by (a limit moved by a drop in between leaves less). */
const MIN_STEP = 0.05;
/** Cruising windows between probes: 3, doubled after each probe that found the edge, up to 8. */
const CRUISE_MIN = 3;
const CRUISE_MAX = 8;
/**
 * A window holds at least this many samples, two rounds of the limit, and ≈ WINDOW_MS of time
 * (half that in startup, which only doubles: a window of a real machine drifts by a few percent
 * in 100 ms, and a probe's rise is 10 %).
 */
const MIN_SAMPLES = 32;
const ROUNDS = 2;
const WINDOW_MS = 200;
const STARTUP_WINDOW_MS = 100;
/** A queue must stand this many standard errors above the baseline (noise is not a queue)… */
const Z = 2.5;
/**
 * …and at least 5 % above it, whatever `tolerance` says: between windows a real machine's RTT
 * drifts by a few percent (timers, collection, other processes) more than one window's spread
 * shows.
 */
const MIN_QUEUE = 1.05;
/**
 * Queued windows in a row that cut the estimate (two in startup): a stall (a collection, another
 * process) slows a window as much as a queue, and on loopback one spanned two 200 ms windows.
 */
const CUT_AFTER = 3;
/** A drop (timeout, push-back, fault) multiplies the estimate by this (AIMD's default backoff). */
const DROP_BACKOFF = 0.9;

const STARTUP = 0;
const PROBE = 1;
const MEASURE = 2;
const CRUISE = 3;

/**
 * Latency-based limit: Netflix's Gradient2 update (limit × baseline ÷ RTT when the RTT rises)
 * with the baseline measured the way BBR and Envoy's adaptive concurrency do it, at a limit below
 * the knee, so that the limit's own queue never becomes the "normal" RTT.
 *
 * Samples are taken in windows (see WINDOW_MS). A closed shard that serves `c` calls at once in
 * `s` ms has a mean RTT of `s` while the limit `L ≤ c`, and `s × L / c` above (Little's law): the
 * mean of a window divided by the baseline is the queue factor q. A window is queued when
 * q > `tolerance` and the rise stands Z standard errors clear of noise; three queued windows in a
 * row (a stall may span two) cut the estimate to L ÷ q, which is `c`.
 *
 * The windows cycle. Startup doubles the limit while it is used and shows no queue (the first
 * window only warms up). Cruising, the limit is the estimate's whole calls. A probe asks for 10 %
 * (and at least one call) more, and is judged against the cruising windows just before it (paired,
 * so the machine's drift cancels): an RTT that rose by half the step at least, in both of
 * the probe's windows, is the edge — the estimate moves to load ÷ q there, and probes half as
 * often (every 3, 6, then 8 cruising windows); less, and the estimate rises to the probe and
 * probes again at once, 10 % at a time. A measuring window, 10 % below, feeds the baseline. The
 * limit grows only when the window's peak in-flight count reached it: callers that never fill it
 * cannot push it to `max`.
 *
 * A cut that does not lower the RTT, twice, means the shard got slower, not queued: the baseline
 * is re-learnt and the cut undone, instead of cutting to the floor. A baseline taken with a queue
 * in it (a start above the capacity) shows as a measuring window clearly faster than it: the
 * limit then measures at half, until the RTT stops falling.
 */
export class GradientLimit implements ConcurrencyLimit {
  private readonly o: Required<GradientOptions>;
  /** The shard's concurrency as estimated now; the limit is this, or a probe above or below it. */
  private estimate: number;
  private value: number;
  /** Mean RTT of the shard without a queue (0 until the first window). */
  private baseline = 0;
  /**
   * The baseline came from a window that may have held a queue (the first one, a re-learn), at
   * `baselineLoad` calls. A window as fast at a lower load proves it: above the knee the RTT
   * moves with the load.
   */
  private baselineUnsure = true;
  private baselineLoad = 0;
  /** The peak in-flight count of the last window: what the callers actually used. */
  private lastPeak = 0;
  private phase = STARTUP;
  private cruiseLength = CRUISE_MIN;
  private cruiseLeft = 0;
  /** Samples to ignore after the limit moved: they began under the old one. */
  private skip = 0;
  private warm = false;
  // The current window.
  private n = 0;
  private sum = 0;
  private squares = 0;
  private inFlightSum = 0;
  private peak = 0;
  /** The estimate before a run of cuts, and the window mean that triggered the last one. */
  private cutFrom = 0;
  private cutMean = 0;
  /** A measuring window after a cut saw the RTT as high as before it; one more will decide. */
  private stillSlow = false;
  /** Queued windows in a row so far, and the least mean RTT among them. */
  private queuedRun = 0;
  private queuedLeast = 0;
  /** A probe's first window rose; the second confirms it (the edge) or not (a stall). */
  private suspect = false;
  /** The windows before the probe (see reference()): their mean RTT and limit. */
  private refLoad = 0;
  private refCount = 0;
  private refSum = 0;
  private refMax = 0;
  /** The mean RTT of a probe's first window. */
  private probeFirst = 0;
  /** The limit of a measuring window that searches down for the knee (0: the usual one). */
  private measureAt = 0;

  constructor(options: Required<GradientOptions>) {
    this.o = options;
    this.estimate = options.initial;
    this.value = options.initial;
  }

  get limit(): number {
    return Math.max(1, Math.round(this.value));
  }

  onSample({ rttMs, inFlight, dropped }: LimitSample): void {
    if (dropped) {
      // Loss is the strongest signal there is; its RTT (a timeout, say) says nothing of the queue.
      this.estimate = Math.max(this.o.min, this.estimate * DROP_BACKOFF);
      if (this.phase === STARTUP) this.phase = CRUISE;
      this.apply();
      return;
    }
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    this.n++;
    this.sum += rttMs;
    this.squares += rttMs * rttMs;
    this.inFlightSum += inFlight;
    if (inFlight > this.peak) this.peak = inFlight;
    // Little's law: the window's span of time is about Σ rtt ÷ mean in-flight.
    if (this.n < Math.max(MIN_SAMPLES, ROUNDS * this.limit)) return;
    const windowMs = this.phase === STARTUP ? STARTUP_WINDOW_MS : WINDOW_MS;
    if (this.sum * this.n < windowMs * this.inFlightSum) return;
    const n = this.n;
    if (!this.warm) {
      // The first window only warms up: connection set-up and compilation slow it.
      this.warm = true;
      this.n = this.sum = this.squares = this.inFlightSum = this.peak = 0;
      return;
    }
    const mean = this.sum / n;
    const standardError = Math.sqrt(Math.max(0, this.squares / n - mean * mean) / n);
    const peak = this.peak;
    this.n = this.sum = this.squares = this.inFlightSum = this.peak = 0;
    this.evaluate(mean, standardError, peak, n);
    this.apply();
  }

  private evaluate(mean: number, standardError: number, peak: number, n: number): void {
    const o = this.o;
    const limit = this.limit;
    const used = peak >= limit;
    // What the callers used, outside measuring windows (whose own limit would compound: each
    // measures below the last).
    if (this.phase !== MEASURE) this.lastPeak = peak;
    if (this.baseline === 0) this.setBaseline(Math.max(mean, 1e-3), peak);
    const noise = Z * standardError;
    const q = mean / this.baseline;
    const above = q > Math.max(o.tolerance, MIN_QUEUE);
    const queued = above && mean - this.baseline > noise;
    const faster = mean * o.tolerance < this.baseline && this.baseline - mean > noise;
    // As fast at another load (≥ 10 % away): the baseline's load was below the knee, since above
    // it the RTT moves with the load.
    if (this.baselineUnsure && !queued && !faster) {
      if (Math.abs(peak - this.baselineLoad) >= 0.1 * this.baselineLoad) {
        this.baselineUnsure = false;
      }
    }
    const phase = this.phase;
    if (phase === PROBE) {
      if (faster) this.learnBaseline(mean, n);
      this.probe(mean, used);
      return;
    }
    this.reference(mean, limit);
    if (queued) {
      if (phase === MEASURE && this.cutFrom > 0) {
        if (mean >= this.cutMean / o.tolerance && mean <= this.cutMean * o.tolerance) {
          if (!this.stillSlow) {
            // The RTT did not fall with the limit. A stall may span two windows: look once
            // more before believing it.
            this.stillSlow = true;
            return;
          }
          // Twice: the shard is slower, not queued. Re-learn the baseline, undo the cuts.
          this.stillSlow = false;
          this.setBaseline(mean, peak);
          this.estimate = this.cutFrom;
          this.cutFrom = 0;
          this.startCruise(CRUISE_MIN);
          return;
        }
      } else if (phase === MEASURE) {
        // A queue below the estimate, with no cut to explain: the next window at it decides.
        this.startCruise(this.cruiseLength);
        return;
      }
      // One window is not a queue yet: a passing stall (a collection, a busy machine) slows a
      // whole window as much, and may span two. Hold the limit; a queue will still be there, and
      // the least of its windows measures it (startup, far from any edge yet, decides on two).
      this.queuedLeast = this.queuedRun === 0 ? mean : Math.min(this.queuedLeast, mean);
      this.queuedRun++;
      if (this.queuedRun < (phase === STARTUP ? 2 : CUT_AFTER)) return;
      this.queuedRun = 0;
      this.cut(mean, this.queuedLeast / this.baseline, used ? limit : peak);
      return;
    }
    this.queuedRun = 0;
    // A window clearly faster than the baseline lowers it (a first window slowed by connection
    // set-up and compilation is common); only measuring windows, below the knee, may raise it.
    if (faster && phase !== MEASURE) {
      this.learnBaseline(mean, n);
    }
    if (phase === MEASURE) {
      if (faster && this.baselineUnsure) {
        // Clearly faster below the estimate: the baseline held a queue (a start above the
        // capacity). Take this one and measure again at half the limit, until the RTT stops
        // falling with it, as startup doubles until it rises.
        // The RTT fell from the baseline's load to this one: the knee is below that load.
        this.estimate = Math.max(o.min, Math.min(this.estimate, this.baselineLoad));
        this.setBaseline(mean, peak);
        this.measureAt = Math.max(o.min, Math.floor(limit / 2));
        return;
      }
      // Otherwise the baseline learns slowly, so that noise moves it little.
      this.learnBaseline(mean, n);
      this.cutFrom = 0;
      this.startCruise(this.cruiseLength);
    } else if (phase === STARTUP) {
      if (used) this.estimate = Math.min(o.max, this.estimate * 2);
      else {
        // The callers did not fill the doubled limit: back to what they used, plus a probe's room.
        this.estimate = Math.max(
          o.min,
          Math.min(this.estimate, Math.max(peak * PROBE_GAIN, peak + o.queueSize)),
        );
        this.phase = MEASURE;
      }
    } else if (--this.cruiseLeft <= 0) {
      this.phase = PROBE;
    }
  }

  /**
   * The windows a probe is judged against: those just before it at the same limit, pooled (one
   * window's mean drifts by a few percent on a real machine, and a probe's rise is ~10 %), the
   * slowest left out from three on (a stall only ever slows a window).
   */
  private reference(mean: number, load: number): void {
    if (load !== this.refLoad) {
      this.refLoad = load;
      this.refCount = 0;
      this.refSum = 0;
      this.refMax = 0;
    }
    this.refCount++;
    this.refSum += mean;
    this.refMax = Math.max(this.refMax, mean);
  }

  private referenceMean(): number {
    return this.refCount < 3
      ? this.refSum / this.refCount
      : (this.refSum - this.refMax) / (this.refCount - 1);
  }

  /**
   * Judges a probe against the windows just before it at the estimate (paired: the machine's slow
   * drift cancels). Past the edge the RTT rises with the load (Little's law: +10 % calls, +10 %
   * RTT); below it, it barely moves. A rise of half the probe's step at least, in both of
   * its windows, is the edge. Anything less: the edge is further, and the estimate rises to the
   * probe.
   */
  private probe(mean: number, used: boolean): void {
    const limit = this.limit;
    if (!used) {
      // The callers did not fill the probe: it proves nothing either way.
      this.suspect = false;
      this.phase = MEASURE;
      return;
    }
    const step = Math.max(MIN_STEP, limit / this.refLoad - 1);
    const before = this.referenceMean();
    const edge = step * EDGE_SLOPE;
    if (!this.suspect && mean / before - 1 >= edge / 2) {
      // A probe that rose lasts two windows, judged by the lesser rise: a stall slows one window
      // as much as the edge does, and it seldom lasts two. One that did not is short of the edge.
      this.suspect = true;
      this.probeFirst = mean;
      return;
    }
    const first = this.suspect ? this.probeFirst : mean;
    this.suspect = false;
    const rise = Math.min(mean, first) / before - 1;
    if (rise >= edge) {
      // Little's law against the RTT without a queue: the baseline, or the windows before the
      // probe if they were faster (a measuring window may have caught a stall).
      this.foundEdge(limit, Math.min(mean, first) / Math.min(this.baseline, before));
      return;
    }
    // Short of the edge. The estimate rises towards the probe: all the way when the RTT held, to
    // limit ÷ (1 + rise) when it rose a little (Little's law: the edge is that close).
    const whole = wholeCalls(this.estimate);
    this.moveEstimate(Math.max(this.estimate, limit / (1 + Math.max(0, rise))));
    this.cruiseLength = CRUISE_MIN;
    if (wholeCalls(this.estimate) <= whole) {
      // Within a call of the edge: cruise at the estimate.
      this.phase = MEASURE;
      return;
    }
    // Probe again at once from here, +10 % at a time (BBR's probes grow their steps; these do
    // not: a grown step would overshoot the edge by as much, and the limit must not swing past
    // the capacity by a third).
    this.reference(Math.min(mean, first), limit);
  }

  /**
   * A probe of `load` calls found the edge, at `load ÷ q` by Little's law: the estimate moves to
   * it, down by a tenth at most (one window may be a stall) and up to the probe at most. Then it
   * measures, and probes half as often while the edge holds.
   */
  private foundEdge(load: number, q: number): void {
    this.moveEstimate(Math.min(load, Math.max(this.estimate * EDGE_STEP, load / q)));
    this.cruiseLength = Math.min(CRUISE_MAX, this.cruiseLength * 2);
    this.phase = MEASURE;
  }

  /** Cuts the estimate to the calls the shard serves at once: `load ÷ q`. Measures next. */
  private cut(mean: number, q: number, load: number): void {
    const before = this.estimate;
    if (this.cutFrom === 0) this.cutFrom = before;
    this.cutMean = mean;
    const target = Math.min(before, load / q);
    this.moveEstimate(target);
    this.cruiseLength = CRUISE_MIN;
    this.phase = MEASURE;
    this.measureAt = 0;
    this.stillSlow = false;
  }

  /** Moves the estimate `smoothing` of the way to `target`, within [min, max]. */
  private moveEstimate(target: number): void {
    const o = this.o;
    const next = this.estimate + o.smoothing * (target - this.estimate);
    this.estimate = Math.min(o.max, Math.max(o.min, next));
  }

  /** Moves the baseline toward a window's mean by its n samples ÷ `longWindow`, at most all. */
  private learnBaseline(mean: number, n: number): void {
    this.baseline += (mean - this.baseline) * Math.min(1, n / this.o.longWindow);
  }

  private setBaseline(mean: number, load: number): void {
    this.baseline = mean;
    this.baselineLoad = load;
    this.baselineUnsure = true;
  }

  private startCruise(length: number): void {
    this.phase = CRUISE;
    this.cruiseLeft = length;
    this.measureAt = 0;
    this.stillSlow = false;
  }

  /** Sets the limit for the phase; when it moves, the samples of calls begun before are skipped. */
  private apply(): void {
    const o = this.o;
    const before = this.limit;
    const estimate = this.estimate;
    // Cruising, the limit is the estimate's whole calls: an estimate between two counts (Little's
    // law gives fractions) rests on the lower one, and probes the upper one.
    const whole = wholeCalls(estimate);
    let value = this.phase === STARTUP ? estimate : whole;
    if (this.phase === PROBE) {
      value = Math.max(wholeCalls(estimate * PROBE_GAIN), whole + Math.max(1, o.queueSize));
    } else if (this.phase === MEASURE) {
      // Below what the callers used, not only below the estimate: below the load, or it shows nothing.
      const load = Math.min(whole, this.lastPeak);
      value =
        this.measureAt > 0
          ? this.measureAt
          : Math.min((load * MEASURE_GAIN) / o.tolerance, load - 1);
    }
    this.value = Math.min(o.max, Math.max(o.min, value));
    const after = this.limit;
    if (after !== before) this.skip = Math.max(before, after);
  }
}

/** The whole calls in `x` (Little's law gives fractions; 1e-9 absorbs 9.999… for 10). */
function wholeCalls(x: number): number {
  return Math.floor(x + 1e-9);
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
    o.tolerance = inRange('gradient.tolerance', options.tolerance, 1, 10);
  }
  if (options.queueSize !== undefined)
    o.queueSize = inRange('gradient.queueSize', options.queueSize, 0, 1e6);
  // An explicit `initial` is kept as given; the default 4 fits under a lower `max`.
  if (options.initial === undefined) o.initial = Math.max(o.min, Math.min(o.max, o.initial));
  checkBounds('gradient', o.initial, o.min, o.max);
  return () => new GradientLimit(o);
}
