/**
 * The fleet figures, from what the shard process recorded (in-flight integrated per window,
 * arrivals per window) and what the producers recorded (latencies). Pure functions.
 */
import type { FleetRun } from './fleet.js';

/** Windows [from, to) of a run, by index. */
export interface Span {
  from: number;
  to: number;
}

/** Each shard's time-averaged in-flight over `span`; max ÷ mean of those (1.00 = even). */
export function maxOverMean(
  run: FleetRun,
  span: Span,
): { max: number; mean: number; ratio: number } {
  const means = run.shards.map((s) => {
    let area = 0;
    for (let w = span.from; w < span.to; w++) area += s.area[w] ?? 0;
    return area / ((span.to - span.from) * run.windowMs);
  });
  const mean = means.reduce((a, b) => a + b, 0) / means.length;
  const max = Math.max(...means);
  return { max, mean, ratio: mean === 0 ? Number.NaN : max / mean };
}

/**
 * Herding: the fraction of windows in `span` where some shard held more than twice its fair
 * share (1/n) of the fleet's in-flight, averaged over that window.
 */
export function herding(run: FleetRun, span: Span): number {
  const n = run.shards.length;
  let herded = 0;
  let counted = 0;
  for (let w = span.from; w < span.to; w++) {
    let total = 0;
    let max = 0;
    for (const s of run.shards) {
      const a = s.area[w] ?? 0;
      total += a;
      if (a > max) max = a;
    }
    if (total === 0) continue;
    counted++;
    if (max / total > 2 / n) herded++;
  }
  return counted === 0 ? Number.NaN : herded / counted;
}

/** `shard`'s share of the requests that arrived in window `w` (NaN when none arrived). */
function shareAt(run: FleetRun, shard: number, w: number): number {
  let total = 0;
  for (const s of run.shards) total += s.arrivals[w] ?? 0;
  return total === 0 ? Number.NaN : (run.shards[shard]!.arrivals[w] ?? 0) / total;
}

/** `shard`'s share of new requests over `span`. */
export function shareOver(run: FleetRun, shard: number, span: Span): number {
  let mine = 0;
  let total = 0;
  for (let w = span.from; w < span.to; w++) {
    for (const s of run.shards) total += s.arrivals[w] ?? 0;
    mine += run.shards[shard]!.arrivals[w] ?? 0;
  }
  return total === 0 ? Number.NaN : mine / total;
}

/**
 * Time from the slowdown (at the start of window `slowFrom`) until `shard`'s share of new requests
 * fell below half of `before` for two consecutive windows: the end of the first of the two, in
 * ms after the slowdown. Infinity when it never did before `end`.
 */
export function halvingMs(
  run: FleetRun,
  shard: number,
  before: number,
  slowFrom: number,
  end: number,
): number {
  for (let w = slowFrom; w + 1 < end; w++) {
    if (shareAt(run, shard, w) < before / 2 && shareAt(run, shard, w + 1) < before / 2) {
      return (w + 1 - slowFrom) * run.windowMs;
    }
  }
  return Number.POSITIVE_INFINITY;
}

/** The p-th percentile (0–100) of the latencies of requests that ended within [fromMs, toMs). */
export function percentile(run: FleetRun, p: number, fromMs: number, toMs: number): number {
  const values: number[] = [];
  for (const producer of run.producers) {
    for (let i = 0; i < producer.ends.length; i++) {
      const end = producer.ends[i]!;
      if (end >= fromMs && end < toMs) values.push(producer.latencies[i]!);
    }
  }
  if (values.length === 0) return Number.NaN;
  values.sort((a, b) => a - b);
  return values[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
}
