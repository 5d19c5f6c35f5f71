/**
 * Shared helpers for the benchmarks: timing, medians, tables. Benchmarks print ratios against a
 * peer measured in the same run (interleaved rounds, medians); they never assert a time.
 */
import fs from 'node:fs';
import os from 'node:os';

/** Nanoseconds on a monotonic scale, as a number (fine for spans under ~100 days). */
export function nowNs(): number {
  return Number(process.hrtime.bigint());
}

/** The median of a non-empty list (the mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A number with `digits` decimals, or `-` when not finite. */
export function fmt(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** A ratio as `1.23×`. */
export function ratio(value: number, digits = 2): string {
  return Number.isFinite(value) ? `${value.toFixed(digits)}×` : '-';
}

/** A goal check as printed beside a figure: `ok` or `MISS`. */
export function goal(pass: boolean): string {
  return pass ? 'ok' : 'MISS';
}

/** Prints rows as an aligned, pipe-separated table (first column left-aligned, others right). */
export function printTable(headers: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]) =>
    `| ${cells
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join(' | ')} |`;
  console.log(line(headers));
  console.log(
    `|${widths.map((w, c) => (c === 0 ? `-${'-'.repeat(w)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));
}

/** Prints a heading line with the runtime, so copied tables say where they were measured. */
export function printHeader(title: string): void {
  const gc = typeof (globalThis as { gc?: unknown }).gc === 'function' ? 'gc exposed' : 'no gc';
  console.log(
    `\n## ${title}  (node ${process.version}, ${process.platform}/${process.arch}, ${gc})\n`,
  );
}

/** Runs `global.gc` when node was started with `--expose-gc`; a no-op otherwise. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Lets pending I/O, timers and microtasks run (one macrotask turn). */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The spread of per-round figures: median, smallest and largest. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** Median and range of a non-empty list. */
export function spread(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** A ratio with its range over the rounds: `1.02× (0.97–1.06)`. */
export function ratioSpread(s: Spread, digits = 2): string {
  return `${ratio(s.median, digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

/** The machine's load when a bench ran: load averages against the cores, e.g. `load 3.1 on 2 cores`. */
export function machineLoad(): string {
  const [one] = os.loadavg();
  return `load ${(one ?? 0).toFixed(1)} on ${os.availableParallelism()} cores`;
}

/** One row of the figures table in docs/performance.md. */
export interface FigureRow {
  /** What is measured (`shardwise p2c, req/s`). */
  figure: string;
  /** shardwise's figure. */
  value: string;
  /** The peer, with its figure from the same run. */
  peer: string;
  /** shardwise against the peer (median of the rounds, and their range). */
  ratio: string;
  goal: string;
}

const FIGURES_START = '<!-- figures:start (written by `npm run bench`; do not edit by hand) -->';
const FIGURES_END = '<!-- figures:end -->';
const FIGURES_HEADER = [
  '| bench | figure | shardwise | peer, same run | ratio (median, range over rounds) | goal | run |',
  '| --- | --- | ---: | --- | ---: | --- | --- |',
];

/**
 * Writes `rows` as `bench`'s part of the one table of figures in docs/performance.md (between its
 * markers), replacing that bench's earlier rows and keeping the others', so `npm run bench`
 * regenerates the whole table and one bench run alone refreshes its own rows. Each row says when
 * and under what machine load it was measured. `SHARDWISE_BENCH_DOCS=0` leaves the file alone.
 */
export function recordFigures(bench: string, rows: readonly FigureRow[]): void {
  if (process.env.SHARDWISE_BENCH_DOCS === '0') return;
  const file = new URL('../docs/performance.md', import.meta.url);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return; // no docs in this checkout (an installed package): nothing to refresh
  }
  const start = text.indexOf(FIGURES_START);
  const end = text.indexOf(FIGURES_END);
  if (start < 0 || end < start) {
    console.warn('docs/performance.md has no figures markers: table not written');
    return;
  }
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const when = `${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${machineLoad()}`;
  const mine = rows.map(
    (r) =>
      `| ${bench} | ${cell(r.figure)} | ${cell(r.value)} | ${cell(r.peer)} | ${cell(r.ratio)} | ${cell(r.goal)} | ${when} |`,
  );
  const body = text.slice(start + FIGURES_START.length, end);
  const kept: string[] = [];
  let placed = false;
  for (const line of body.split('\n')) {
    if (!line.startsWith('| ') || FIGURES_HEADER.includes(line)) continue;
    const owner = line.slice(2, line.indexOf(' |', 2));
    if (owner === bench) {
      if (!placed) kept.push(...mine);
      placed = true;
    } else kept.push(line);
  }
  if (!placed) kept.push(...mine);
  const table = ['', ...FIGURES_HEADER, ...kept, ''].join('\n');
  fs.writeFileSync(file, text.slice(0, start + FIGURES_START.length) + table + text.slice(end));
  console.log(`figures written to docs/performance.md (${rows.length} rows for ${bench})`);
}
