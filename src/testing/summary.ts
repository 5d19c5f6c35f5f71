/**
 * What a simulation measured and the figures it reports: run latencies (admission to settlement)
 * after the warm-up, their quantiles, CDF and fixed-bucket histogram, per-shard counts and the
 * imbalance. The quantile here is the one every shardwise table uses (the CLI's included), so a
 * p99 means the same thing wherever it is printed.
 */
import { ConfigError } from '../base/errors.js';
import type { SimShard } from './sim-shard.js';

/**
 * Upper-exclusive bucket edges of {@link LatencyHistogram}, virtual ms: `10^(k/20)` for
 * k = −40 … 140, i.e. 0.01 ms to 10 000 000 ms (≈ 2.8 virtual hours), 20 buckets per decade, each
 * ≈ 12.2 % wider than the last. Fixed, like the exponential buckets of Prometheus' native
 * histograms, so histograms of different runs (seeds, pickers) add bucket by bucket.
 */
export const LATENCY_BUCKET_EDGES_MS: readonly number[] = Object.freeze(
  Array.from({ length: 181 }, (_, i) => 10 ** ((i - 40) / 20)),
);

/**
 * Run latencies counted in fixed log-spaced buckets. `counts` has one more entry than `edgesMs`
 * on each side: `counts[0]` holds latencies below `edgesMs[0]` (0.01 ms, zero included),
 * `counts[i]` those in `[edgesMs[i − 1], edgesMs[i])`, and the last those at or above the last edge.
 *
 * @example
 * const { edgesMs, counts } = result.latency.histogram;
 * const over100ms = counts.reduce((n, c, i) => (i > 0 && edgesMs[i - 1]! >= 100 ? n + c : n), 0);
 */
export interface LatencyHistogram {
  /** {@link LATENCY_BUCKET_EDGES_MS}: 181 edges. */
  edgesMs: readonly number[];
  /** 182 counts; they sum to the runs measured. */
  counts: number[];
}

/** Latency figures over runs, admission to settlement, virtual ms (warm-up runs excluded). */
export interface LatencySummary {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  /** The latency distribution at 200 evenly spaced quantiles (for CDF plots): `ms[i]` at `q[i]`. */
  cdf: { q: number[]; ms: number[] };
  /** Every measured run's latency in fixed log-spaced buckets. */
  histogram: LatencyHistogram;
  /**
   * Every measured run's latency, ascending: present with `latencies: 'sorted'`. For figures the
   * summary does not give, e.g. `quantile(sorted, 0.9999)` or the mean of the slowest 1 %.
   */
  sorted?: Float64Array;
}

/** One shard's figures (attempts started after the warm-up). */
export interface ShardResult {
  id: string;
  /** Attempts the balancer started on it (`stats().shards[i].requests`). */
  requests: number;
  /** Attempts that failed on it, as the balancer counts them (timeouts included). */
  failures: number;
  /** p99 of its attempts, from the call to the shard's answer (queue wait included), virtual ms. */
  p99: number;
  /** Highest in-flight count the balancer had on it (seen at each call). */
  maxInFlight: number;
}

/** What the warm-up excluded: the runs admitted before it ended, and when it ended. */
export interface WarmupSummary {
  /** Runs admitted during the warm-up (0 without one). */
  requests: number;
  /** Virtual time the warm-up ended, ms (0 without one). */
  ms: number;
}

/**
 * The nearest-rank q-quantile of ascending values: the smallest value with at least a fraction q
 * of the values at or below it (0 for none). Exact on the values given, no interpolation.
 *
 * @example
 * quantile(Float64Array.from([5, 1, 3]).sort(), 0.5); // 3
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (typeof q !== 'number' || !(q >= 0 && q <= 1)) {
    throw new ConfigError('q', 'must be a number from 0 to 1', q);
  }
  const n = sorted.length;
  if (n === 0) return 0;
  // q × n carries the rounding of q (0.07 × 100 is 7.000000000000001): a few ulps off an integer
  // is that integer, or the rank would be one too high.
  const rank = Math.min(n, Math.max(1, Math.ceil(q * n - n * 4 * Number.EPSILON)));
  return sorted[rank - 1]!;
}

/** Counts ascending `sorted` into {@link LATENCY_BUCKET_EDGES_MS} buckets. */
export function histogramOf(sorted: ArrayLike<number>): LatencyHistogram {
  const edges = LATENCY_BUCKET_EDGES_MS;
  const counts = new Array<number>(edges.length + 1).fill(0);
  let bucket = 0;
  for (let i = 0; i < sorted.length; i++) {
    const ms = sorted[i]!;
    while (bucket < edges.length && ms >= edges[bucket]!) bucket++;
    counts[bucket]!++;
  }
  return { edgesMs: edges, counts };
}

function cdfOf(sorted: Float64Array): { q: number[]; ms: number[] } {
  const q: number[] = [];
  const ms: number[] = [];
  for (let i = 1; i <= 200; i++) {
    q.push(i / 200);
    ms.push(quantile(sorted, i / 200));
  }
  return { q, ms };
}

/**
 * The runs of one simulation: each measured run's latency and outcome, and its attempts per
 * shard, counted by the run (a warm-up run's retries and failures after the warm-up ended are
 * the warm-up's, not the measurement's).
 */
export class Measurement {
  readonly latencies: Float64Array;
  private settled = 0;
  private failed = 0;
  private retries = 0;
  private readonly attempts: Float64Array;
  private readonly failures: Float64Array;
  readonly warmup: WarmupSummary = { requests: 0, ms: 0 };

  constructor(
    readonly requests: number,
    shards: number,
  ) {
    this.latencies = new Float64Array(requests);
    this.attempts = new Float64Array(shards);
    this.failures = new Float64Array(shards);
  }

  /** Ends the warm-up at `nowMs`, after `admitted` runs. */
  endWarmup(nowMs: number, admitted: number): void {
    this.warmup.ms = nowMs;
    this.warmup.requests = admitted;
  }

  /** A measured run's attempt number `attempt` started on shard `index`. */
  attempt(index: number, attempt: number): void {
    this.attempts[index]!++;
    if (attempt > 1) this.retries++;
  }

  /** A measured run's attempt on shard `index` failed (as the balancer counts: timeouts too). */
  attemptFailed(index: number): void {
    this.failures[index]!++;
  }

  /** A measured run settled after `ms`. */
  record(ms: number, ok: boolean): void {
    this.latencies[this.settled++] = ms;
    if (!ok) this.failed++;
  }

  /** The figures of the measured runs. */
  summarize(sims: readonly SimShard[], keepSorted: boolean) {
    const perShard = sims.map((sim, i): ShardResult => {
      const own = Float64Array.from(sim.latencies).sort();
      return {
        id: sim.id,
        requests: this.attempts[i]!,
        failures: this.failures[i]!,
        p99: quantile(own, 0.99),
        maxInFlight: sim.maxInFlight,
      };
    });
    const latencies = this.latencies.sort();
    let sum = 0;
    for (let i = 0; i < latencies.length; i++) sum += latencies[i]!;
    let max = 0;
    let total = 0;
    for (const shard of perShard) {
      total += shard.requests;
      if (shard.requests > max) max = shard.requests;
    }
    const meanRequests = total / perShard.length;
    const latency: LatencySummary = {
      mean: sum / this.requests,
      p50: quantile(latencies, 0.5),
      p90: quantile(latencies, 0.9),
      p99: quantile(latencies, 0.99),
      p999: quantile(latencies, 0.999),
      cdf: cdfOf(latencies),
      histogram: histogramOf(latencies),
    };
    if (keepSorted) latency.sorted = latencies;
    return {
      latency,
      perShard,
      imbalance: meanRequests > 0 ? max / meanRequests : 0,
      failures: this.failed,
      retries: this.retries,
      warmup: this.warmup,
    };
  }
}
