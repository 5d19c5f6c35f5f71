/**
 * Shared helpers for the benchmarks: timing, medians, tables. Benchmarks print ratios against a
 * peer measured in the same run (interleaved rounds, medians); they never assert a time.
 */

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
