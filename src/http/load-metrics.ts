import type { ShardState } from '../base/types.js';
import type { LoadReportFigures } from '../load/load-report.js';

/** The ORCA response header Envoy reads (and `weightedByLoadReport()` weighs shards by). */
export const LOAD_METRICS_HEADER = 'endpoint-load-metrics';

interface LoadReportSink {
  loadReports?: { record(figures: LoadReportFigures): void };
}

/**
 * Parses an ORCA `endpoint-load-metrics` header: the `TEXT` form
 * (`TEXT cpu_utilization=0.52, rps_fractional=1210, eps=3`) or the `JSON` form
 * (`JSON {"cpu_utilization":0.52,"rps_fractional":1210}`). A header is a shard's word about
 * itself, so the parser is lenient and never throws: spacing, order and case of the prefix do not
 * matter, unknown keys (`mem_utilization`, `named_metrics.*`) are ignored, and so is a malformed
 * or negative figure. `application_utilization`, when above 0, stands for `cpu_utilization`, as
 * in gRPC's weighted round robin (proposal A58). Returns undefined unless both utilization and
 * `rps_fractional` are usable; `eps` defaults to 0.
 *
 * @example
 * parseLoadMetrics('TEXT cpu_utilization=0.5, rps_fractional=100, eps=2');
 * // → { cpuUtilization: 0.5, rpsFractional: 100, eps: 2 }
 */
export function parseLoadMetrics(
  value: string | string[] | undefined,
): LoadReportFigures | undefined {
  if (Array.isArray(value)) value = value[0];
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const space = text.indexOf(' ');
  const format = (space < 0 ? '' : text.slice(0, space)).toUpperCase();
  if (format === 'JSON') return fromJson(text.slice(space + 1));
  if (format === 'BIN') return undefined; // protobuf: not read here
  return fromText(format === 'TEXT' ? text.slice(space + 1) : text);
}

function fromText(body: string): LoadReportFigures | undefined {
  let cpu = Number.NaN;
  let app = Number.NaN;
  let rps = Number.NaN;
  let eps = Number.NaN;
  for (const pair of body.split(',')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const key = pair.slice(0, eq).trim().toLowerCase();
    const raw = pair.slice(eq + 1).trim();
    // Number('') is 0: an empty value is malformed, not zero.
    const n = raw === '' ? Number.NaN : Number(raw);
    if (key === 'cpu_utilization') cpu = n;
    else if (key === 'application_utilization') app = n;
    else if (key === 'rps_fractional') rps = n;
    else if (key === 'eps') eps = n;
  }
  return figures(cpu, app, rps, eps);
}

function fromJson(body: string): LoadReportFigures | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const o = parsed as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' ? v : Number.NaN);
  return figures(
    num(o.cpu_utilization ?? o.cpuUtilization),
    num(o.application_utilization ?? o.applicationUtilization),
    num(o.rps_fractional ?? o.rpsFractional),
    num(o.eps),
  );
}

function usable(n: number): boolean {
  return Number.isFinite(n) && n >= 0;
}

function figures(
  cpu: number,
  app: number,
  rps: number,
  eps: number,
): LoadReportFigures | undefined {
  const utilization = usable(app) && app > 0 ? app : cpu;
  if (!usable(utilization) || !usable(rps)) return undefined;
  return { cpuUtilization: utilization, rpsFractional: rps, eps: usable(eps) ? eps : 0 };
}

/** Feeds a parsed report to the shard's record (the one place the transport writes one). */
export function feedLoadMetrics(shard: ShardState, report: LoadReportFigures): void {
  (shard as unknown as LoadReportSink).loadReports?.record(report);
}
