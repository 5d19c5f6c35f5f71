/**
 * What a simulation measured and the figures it reports: run latencies (admission to settlement)
 * after the warm-up, their quantiles, CDF and fixed-bucket histogram, per-shard counts and the
 * imbalance. The quantile here is the one every shardwise table uses (the CLI's included), so a
 * p99 means the same thing wherever it is printed.
 */
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

/** The balancer counters the summary reads (a subset of `stats()`). */
interface Counters {
  retries: number;
  shards: readonly { requests: number; failures: number }[];
}

/**
 * The nearest-rank q-quantile of ascending values: the smallest value with at least a fraction q
 * of the values at or below it (0 for none). Exact on the values given, no interpolation.
 *
 * @example
 * quantile(Float64Array.from([5, 1, 3]).sort(), 0.5); // 3
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
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
 * The runs of one simulation: each measured run's latency and outcome, and the balancer's
 * counters when the warm-up ended (subtracted from the final ones).
 */
export class Measurement {
  readonly latencies: Float64Array;
  private settled = 0;
  private failed = 0;
  private base: Counters | undefined;
  readonly warmup: WarmupSummary = { requests: 0, ms: 0 };

  constructor(readonly requests: number) {
    this.latencies = new Float64Array(requests);
  }

  /** Ends the warm-up at `nowMs`, after `admitted` runs; `counters` are the balancer's then. */
  endWarmup(nowMs: number, admitted: number, counters: Counters, sims: readonly SimShard[]): void {
    this.warmup.ms = nowMs;
    this.warmup.requests = admitted;
    this.base = {
      retries: counters.retries,
      shards: counters.shards.map(({ requests, failures }) => ({ requests, failures })),
    };
    for (const sim of sims) sim.measuring = true;
  }

  /** A measured run settled after `ms`. */
  record(ms: number, ok: boolean): void {
    this.latencies[this.settled++] = ms;
    if (!ok) this.failed++;
  }

  /** The figures of the measured runs, from the balancer's final counters. */
  summarize(counters: Counters, sims: readonly SimShard[], keepSorted: boolean) {
    const base = this.base;
    const perShard = sims.map((sim, i): ShardResult => {
      const s = counters.shards[i]!;
      const before = base?.shards[i];
      const own = Float64Array.from(sim.latencies).sort();
      return {
        id: sim.id,
        requests: s.requests - (before?.requests ?? 0),
        failures: s.failures - (before?.failures ?? 0),
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
      retries: counters.retries - (base?.retries ?? 0),
      warmup: this.warmup,
    };
  }
}
