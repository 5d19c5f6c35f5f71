import { ConfigError } from '../base/errors.js';
import type { Clock, LoadReport } from '../base/types.js';
import { checkKnownKeys, checkObject } from '../base/validate.js';

/**
 * What a shard reports about its own load, in the terms of ORCA (Open Request Cost Aggregation,
 * the figures Envoy reads from the `endpoint-load-metrics` header and gRPC's weighted round robin,
 * proposal A58, weighs shards by). Figures cover the shard as a whole — all its producers — so
 * independent producers that read them agree on its capacity.
 *
 * @example
 * balancer.reportLoad('a', { cpuUtilization: 0.52, rpsFractional: 1210, eps: 3 });
 */
export interface LoadReportFigures {
  /** Utilization of the shard, ≥ 0 (1 = fully busy; may exceed 1 on some platforms). */
  cpuUtilization: number;
  /** Requests per second the shard serves (all clients), ≥ 0. */
  rpsFractional: number;
  /** Errors per second the shard returns (all clients), ≥ 0 (default 0). */
  eps?: number;
}

export type { LoadReport };

const FIGURE_KEYS = ['cpuUtilization', 'rpsFractional', 'eps'];

/**
 * Checks figures passed by a caller (`Balancer.reportLoad`): each a finite number ≥ 0, `eps`
 * optional. Throws a `ConfigError` naming the field.
 */
export function checkLoadReport(field: string, value: unknown): LoadReportFigures {
  checkObject(field, value);
  checkKnownKeys(field, value, FIGURE_KEYS);
  const figures = value as LoadReportFigures;
  figure(`${field}.cpuUtilization`, figures.cpuUtilization);
  figure(`${field}.rpsFractional`, figures.rpsFractional);
  if (figures.eps !== undefined) figure(`${field}.eps`, figures.eps);
  return figures;
}

function figure(field: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ConfigError(field, 'must be a finite number ≥ 0', value);
  }
}

/**
 * One shard's load reports: the latest figures and when the first and latest arrived. Kept by the
 * balancer's shard record (transports and `reportLoad` write it, pickers only read it), updated in
 * place so a report costs no allocation.
 */
export class LoadReportStore implements LoadReport {
  cpuUtilization = 0;
  rpsFractional = 0;
  eps = 0;
  atMs = Number.NEGATIVE_INFINITY;
  firstAtMs = Number.NEGATIVE_INFINITY;
  private readonly clock: Clock;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** Records figures already checked (by `checkLoadReport` or a lenient parser). */
  record(figures: LoadReportFigures): void {
    const now = this.clock.now();
    this.cpuUtilization = figures.cpuUtilization;
    this.rpsFractional = figures.rpsFractional;
    this.eps = figures.eps ?? 0;
    if (this.firstAtMs === Number.NEGATIVE_INFINITY) this.firstAtMs = now;
    // The silences before reports, latest last, each longer than those after it: for any gap,
    // the latest report that followed one at least that long is found here (a report with a
    // longer silence before it makes the earlier, shorter ones irrelevant).
    const gap = now - this.atMs; // +∞ for the first report
    const starts = this.#starts;
    while (starts.length > 0 && starts[starts.length - 2]! <= gap) starts.length -= 2;
    starts.push(gap, now);
    this.atMs = now;
  }

  /** Pairs of (silence before a report, its time), silences decreasing. */
  readonly #starts: number[] = [];

  streakStartMs(gapMs: number): number {
    const starts = this.#starts;
    for (let i = starts.length - 2; i >= 0; i -= 2) {
      if (starts[i]! >= gapMs) return starts[i + 1]!;
    }
    return this.firstAtMs;
  }

  /** This record once a report arrived, else undefined. */
  get latest(): LoadReport | undefined {
    return this.atMs === Number.NEGATIVE_INFINITY ? undefined : this;
  }
}
