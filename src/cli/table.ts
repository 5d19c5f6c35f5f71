import { WIDTH } from './wrap.js';

/**
 * A plain text table with right-aligned figures, for terminals and logs alike, at most `width`
 * columns wide: the first column (a name) takes what the figures leave, and a name longer than
 * that goes on a line of its own, its figures on the next.
 */
export function table(header: string[], rows: string[][], width = WIDTH): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const figures = widths.slice(1).reduce((sum, w) => sum + 2 + w, 0);
  widths[0] = Math.max(header[0]!.length, Math.min(widths[0]!, width - figures));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const lines = [line(header), widths.map((w) => '-'.repeat(w)).join('  ')];
  for (const row of rows) {
    const name = row[0] ?? '';
    if (name.length > widths[0]!) lines.push(name, line(['', ...row.slice(1)]));
    else lines.push(line(row));
  }
  return lines.join('\n');
}
