/**
 * The demo's live progress. In a terminal: one line redrawn in place (`\r`), at most 79 columns so
 * it never wraps in an 80-column window, each figure labelled. Elsewhere (a pipe, a CI log): a
 * full entry every few seconds, wrapped to 80 columns, since `\r` updates would pile up as one
 * unreadable line.
 */
import { wrap } from './wrap.js';

/** What a pass has done so far. */
export interface ProgressFigures {
  /** Records a shard accepted. */
  written: number;
  /** Records reported failed after retries. */
  failed: number;
  /** Calls outstanding now. */
  inFlight: number;
  /** Runs waiting for a slot now. */
  queued: number;
  retries: number;
  /** Records each shard accepted, in shard order. */
  perShard: readonly number[];
}

/** Columns a terminal line may take: one fewer than 80, so the cursor never wraps. */
export const TERMINAL_WIDTH = 79;

const count = (n: number) => n.toLocaleString('en');

function shares(f: ProgressFigures): number[] {
  return f.perShard.map((n) => Math.round((n * 100) / Math.max(1, f.written)));
}

/**
 * The terminal line: `41% written  12,345/s  64 in flight  12 queued  share % 12 13 …`, per-shard
 * shares of the records written, in shard order. When they do not all fit in `width`, the share
 * part becomes `share % 1–13` (lowest–highest).
 */
export function terminalLine(
  f: ProgressFigures,
  total: number,
  ratePerSecond: number,
  width = TERMINAL_WIDTH,
): string {
  const head = [
    `${Math.floor((f.written * 100) / Math.max(1, total))}% written`,
    `${count(Math.round(ratePerSecond))}/s`,
    `${f.inFlight} in flight`,
    `${f.queued} queued`,
  ].join('  ');
  const each = shares(f);
  const full = `${head}  share % ${each.join(' ')}`;
  if (full.length <= width) return full;
  const range = `${head}  share % ${Math.min(...each)}–${Math.max(...each)}`;
  return range.length <= width ? range : head.slice(0, width);
}

/** The entry for logs, one line before wrapping: every figure in full, the picker first, shards by index. */
export function logLine(
  picker: string,
  f: ProgressFigures,
  total: number,
  ratePerSecond: number,
): string {
  const perShard = shares(f)
    .map((share, i) => `${i}:${share}`)
    .join(' ');
  return (
    `${picker}: ${count(f.written)}/${count(total)} written, ${count(Math.round(ratePerSecond))} records/s, ` +
    `${f.inFlight} in flight, ${f.queued} queued, ${f.retries} retries, ${f.failed} failed, ` +
    `share % by shard ${perShard}`
  );
}

/** Draws a pass's progress to `out`: in place on a terminal, a line every `logEveryMs` elsewhere. */
export class Progress {
  private lastMs: number;
  private lastWritten = 0;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly options: {
      picker: string;
      total: number;
      tty: boolean;
      startMs: number;
      /** Terminal redraw interval (default 200 ms). */
      drawEveryMs?: number;
      /** Log line interval (default 3 000 ms). */
      logEveryMs?: number;
    },
  ) {
    this.lastMs = options.startMs;
    if (options.tty) out.write(`${options.picker}: ${count(options.total)} records\n`);
  }

  /** Draws if the interval has passed since the last line. */
  update(nowMs: number, figures: () => ProgressFigures): void {
    const every = this.options.tty
      ? (this.options.drawEveryMs ?? 200)
      : (this.options.logEveryMs ?? 3_000);
    if (nowMs - this.lastMs >= every) this.draw(nowMs, figures(), false);
  }

  /** The last line of the pass, always drawn. */
  finish(nowMs: number, figures: ProgressFigures): void {
    this.draw(nowMs, figures, true);
  }

  private draw(nowMs: number, f: ProgressFigures, final: boolean): void {
    // Live lines show the rate since the last line; the last one the pass's average.
    const rate = final
      ? (f.written * 1000) / Math.max(1, nowMs - this.options.startMs)
      : ((f.written - this.lastWritten) * 1000) / Math.max(1, nowMs - this.lastMs);
    this.lastMs = nowMs;
    this.lastWritten = f.written;
    const { picker, total, tty } = this.options;
    if (tty) {
      this.out.write(`\r\x1b[2K${terminalLine(f, total, rate)}${final ? '\n' : ''}`);
    } else {
      this.out.write(`${wrap(logLine(picker, f, total, rate), '  ', 'clause')}\n`);
    }
  }
}
