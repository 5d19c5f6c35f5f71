import { ConfigError } from '../base/errors.js';
import type { Picker, PickRequest, ShardState } from '../base/types.js';
import { checkKnownKeys, checkObject, duration, orDefault } from '../base/validate.js';
import { weightedRoundRobin } from './weighted-round-robin.js';

/**
 * Options of {@link weightedByLoadReport}.
 *
 * @example
 * weightedByLoadReport({ blackoutMs: 5_000, expiryMs: 60_000, errorPenalty: 2 });
 */
export interface WeightedByLoadReportOptions {
  /** Time after a shard's first report (or its first after an expiry) before its weight counts, ms (default 10 000). */
  blackoutMs?: number;
  /** Time after a shard's last report when its weight stops counting, ms (default 180 000). */
  expiryMs?: number;
  /** How much a shard's errors per second weigh against it, ≥ 0 (default 1.0). */
  errorPenalty?: number;
}

/**
 * The picker: a `Picker` plus a read-out of the weights it uses.
 *
 * @example
 * const picker = weightedByLoadReport();
 * console.log(picker.weightOf('10.0.0.1:8080')); // e.g. 2327 (rps / utilization), or the mean
 */
export interface LoadReportPicker extends Picker {
  /** The weight the picker gives a member shard now (as of its last recompute), or undefined. */
  weightOf(shardId: string): number | undefined;
}

/** Weights are recomputed at most this often (A58's `weight_update_period` default). */
const RECOMPUTE_MS = 1_000;
/**
 * No shard's weight counts for more than this many times the (lower) median weight: gRPC's
 * static stride scheduler clips at 10× too, but of the mean, which the outlier itself lifts.
 */
export /** Past this, weights are rescaled (see `recompute`). */
const MAX_WEIGHT_TOTAL = 1e300;
const MAX_WEIGHT_RATIO = 10;

/**
 * A shard seen through the weight the load reports give it: the smooth weighted round robin of
 * `weightedRoundRobin()` reads `weight` and `index` and nothing else, so it runs unchanged over
 * these views.
 */
class Weighted {
  constructor(
    readonly shard: ShardState,
    readonly index: number,
    private readonly weights: { values: Float64Array },
  ) {}

  get weight(): number {
    return this.weights.values[this.index] ?? 1;
  }
}

/**
 * Weighted round robin over the load each shard reports about itself (gRPC's weighted round
 * robin, proposal A58, over ORCA figures from the `endpoint-load-metrics` header or
 * `Balancer.reportLoad`). A shard's weight is `rps / (utilization + errorPenalty × eps / rps)`:
 * its capacity as *it* sees it from all producers, so independent producers agree. A weight
 * counts once the shard has reported for `blackoutMs` (a fresh shard's first figures are noisy)
 * and stops `expiryMs` after its last report; a shard without a usable weight — never reported,
 * in blackout, expired, or reporting 0 utilization or 0 rps — gets the mean weight of the others
 * (1 when none has one). A weight counts for at most {@link MAX_WEIGHT_RATIO}× the lower median of
 * the usable weights: a shard whose figures are off by a unit (utilization 0.0052 for 0.52), or
 * that lies, could otherwise claim nearly every pick, and the median cannot be moved by fewer
 * than half of the shards. Weights are recomputed at most once a second (and on membership
 * change), from `request.now`; picks are the smooth weighted round robin of
 * `weightedRoundRobin()`. No allocation per pick.
 *
 * After an expiry the blackout restarts with the next report; the picker sees the expiry when it
 * recomputes, so the new blackout may start up to a second before that report.
 *
 * @example
 * const http = createHttpBalancer({ origins, picker: weightedByLoadReport({ blackoutMs: 5_000 }) });
 * // each shard answers with `endpoint-load-metrics: TEXT cpu_utilization=0.52, rps_fractional=1210, eps=3`
 */
export function weightedByLoadReport(options: WeightedByLoadReportOptions = {}): LoadReportPicker {
  checkObject('weightedByLoadReport options', options);
  checkKnownKeys('weightedByLoadReport', options, ['blackoutMs', 'expiryMs', 'errorPenalty']);
  const blackoutMs = orDefault(options.blackoutMs, 10_000, (v) =>
    duration('weightedByLoadReport.blackoutMs', v),
  );
  const expiryMs = orDefault(options.expiryMs, 180_000, (v) =>
    duration('weightedByLoadReport.expiryMs', v, true),
  );
  const errorPenalty = orDefault(options.errorPenalty, 1, (v) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new ConfigError('weightedByLoadReport.errorPenalty', 'must be a finite number ≥ 0', v);
    }
    return v;
  });

  const inner = weightedRoundRobin();
  const weights = { values: new Float64Array(0) };
  /** The usable weights of a recompute, sorted for their median. */
  let usable = new Float64Array(0);
  let members: readonly ShardState[] = [];
  /** Views by shard index: what `inner` is handed as the shards. */
  let views: Weighted[] = [];
  const scratch: Weighted[] = [];
  let computedAt = Number.NEGATIVE_INFINITY;
  /** When the picker last saw a shard's report expired: its blackout restarts after that. */
  const expiredAt = new WeakMap<ShardState, number>();

  function weightFrom(shard: ShardState, now: number): number {
    const report = shard.loadReport;
    if (report === undefined) return 0;
    if (now - report.atMs >= expiryMs) {
      expiredAt.set(shard, now);
      return 0;
    }
    // The blackout restarts after an expiry: one this picker saw, or a silence between reports
    // as long (reports that lapsed while nothing was picked, then resumed).
    const start = report.streakStartMs?.(expiryMs) ?? report.firstAtMs;
    const since = Math.max(start, expiredAt.get(shard) ?? Number.NEGATIVE_INFINITY);
    if (now - since < blackoutMs) return 0;
    const { rpsFractional: rps, cpuUtilization: utilization, eps } = report;
    if (!(rps > 0) || !(utilization > 0)) return 0;
    const weight = rps / (utilization + (errorPenalty * eps) / rps);
    return Number.isFinite(weight) && weight > 0 ? weight : 0;
  }

  function recompute(now: number): void {
    const values = weights.values;
    let valid = 0;
    for (let i = 0; i < members.length; i++) {
      const shard = members[i]!;
      const w = weightFrom(shard, now);
      values[shard.index] = w;
      if (w > 0) usable[valid++] = w;
    }
    const median = valid === 0 ? 0 : usable.subarray(0, valid).sort()[(valid - 1) >> 1]!;
    const cap = MAX_WEIGHT_RATIO * median;
    let sum = 0;
    for (let i = 0; i < members.length; i++) {
      const index = members[i]!.index;
      if (values[index]! > cap) values[index] = cap;
      sum += values[index]!;
    }
    // Figures near the largest double (1.5e308 rps) would make the round robin's total Infinity,
    // and every pick fail: then the weights are counted in units of the median instead.
    if (!(sum * members.length < MAX_WEIGHT_TOTAL)) {
      sum = 0;
      for (let i = 0; i < members.length; i++) {
        const index = members[i]!.index;
        values[index]! /= median;
        sum += values[index]!;
      }
    }
    const mean = valid === 0 ? 1 : sum / valid;
    for (let i = 0; i < members.length; i++) {
      const index = members[i]!.index;
      if (values[index] === 0) values[index] = mean;
    }
    computedAt = now;
  }

  function rebuild(shards: readonly ShardState[]): void {
    members = shards;
    let size = 0;
    for (const shard of shards) size = Math.max(size, shard.index + 1);
    weights.values = new Float64Array(size);
    usable = new Float64Array(shards.length);
    views = new Array(size);
    for (const shard of shards) views[shard.index] = new Weighted(shard, shard.index, weights);
    inner.rebuild?.(views as unknown as ShardState[]);
    computedAt = Number.NEGATIVE_INFINITY;
  }

  /** True when every offered shard has its view (always, once the balancer called `rebuild`). */
  function known(shards: readonly ShardState[]): boolean {
    for (let i = 0; i < shards.length; i++) {
      const shard = shards[i]!;
      if (views[shard.index]?.shard !== shard) return false;
    }
    return true;
  }

  return {
    name: 'weighted-by-load-report',
    rebuild,
    pick(shards: readonly ShardState[], request: PickRequest) {
      if (shards.length === 0) return undefined;
      const now = request.now ?? 0;
      // Used by hand without `rebuild`: the offered shards are taken as the membership.
      if (shards !== members && !known(shards)) rebuild(shards);
      if (now - computedAt >= RECOMPUTE_MS) recompute(now);
      let offered: readonly Weighted[];
      if (shards === members && views.length === shards.length) offered = views;
      else {
        scratch.length = 0;
        for (let i = 0; i < shards.length; i++) scratch.push(views[shards[i]!.index]!);
        offered = scratch;
      }
      const chosen = inner.pick(offered as unknown as ShardState[], request) as unknown as
        | Weighted
        | undefined;
      return chosen?.shard;
    },
    weightOf(shardId: string) {
      for (let i = 0; i < members.length; i++) {
        if (members[i]!.id === shardId) return weights.values[members[i]!.index];
      }
      return undefined;
    },
  };
}
