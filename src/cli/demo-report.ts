/**
 * The demo's closing report: one table row per pass, the records lost, and which picker won at
 * p99 and by how much. Every pass (one per picker today; more kinds may follow) gives a `Row`.
 */
import { table } from './table.js';

/** What one pass measured. */
export interface Row {
  picker: string;
  seconds: number;
  /** Records per second over the pass. */
  rate: number;
  p50: number;
  p99: number;
  /** The slow shard's share of the records sent while it was slow. */
  slowShare: number;
  retries: number;
  ejections: number;
  failed: number;
  /** Records neither received by a shard nor reported failed. */
  lost: number;
}

/** The comparison table: narrow enough for 80 columns with the default pickers' names. */
export function rowsTable(rows: readonly Row[]): string {
  return table(
    ['picker', 'records/s', 'p50 ms', 'p99 ms', 'to slow', 'retries', 'ejects', 'failed', 'lost'],
    rows.map((r) => [
      r.picker,
      Math.round(r.rate).toLocaleString('en'),
      r.p50.toFixed(1),
      r.p99.toFixed(1),
      `${(r.slowShare * 100).toFixed(1)} %`,
      String(r.retries),
      String(r.ejections),
      String(r.failed),
      String(r.lost),
    ]),
  );
}

/**
 * The picker with the lowest p99 and its margin over the runner-up (the next lowest), e.g.
 * `winner at p99: peak-ewma, 28.5 ms vs 43.6 ms for p2c, the runner-up (1.53× better)`.
 */
export function winnerLine(rows: readonly Row[]): string {
  const ranked = [...rows].sort((a, b) => a.p99 - b.p99);
  const best = ranked[0];
  if (best === undefined) return 'winner at p99: none (no picker ran)';
  const next = ranked[1];
  if (next === undefined) {
    return `winner at p99: ${best.picker}, the only picker run (${best.p99.toFixed(1)} ms)`;
  }
  if (best.p99.toFixed(1) === next.p99.toFixed(1)) {
    const tied = ranked
      .filter((r) => r.p99.toFixed(1) === best.p99.toFixed(1))
      .map((r) => r.picker);
    return `winner at p99: none, ${tied.join(' and ')} tie at ${best.p99.toFixed(1)} ms`;
  }
  const ratio = best.p99 > 0 ? `${(next.p99 / best.p99).toFixed(2)}×` : 'infinitely';
  return (
    `winner at p99: ${best.picker}, ${best.p99.toFixed(1)} ms vs ${next.p99.toFixed(1)} ms ` +
    `for ${next.picker}, the runner-up (${ratio} better)`
  );
}
