/**
 * The live progress of a load (`shardwise ingest`, `shardwise replay`), on stderr. In a terminal:
 * one line redrawn in place, at most 79 columns — % of the files read, records/s, MB/s, ETA, then
 * why shards wait (ejected, down, pushing back, slow: not merely at their cap, which is the
 * load keeping up), or else each shard's share of the records written. In a log: an entry every few
 * seconds with every figure, wrapped to 80 columns. Shards are told by their index in `--to`.
 */
import type { IngestProgress, ShardWait } from '../ingest/types.js';
import { TERMINAL_WIDTH } from './progress.js';
import { wrap } from './wrap.js';

/** Where the load stands, beside the ingestion's own figures. */
export interface LoadFigures {
  progress: IngestProgress;
  /** Bytes of the files read, and whether that is exact for the file being read. */
  read: { bytes: number; exact: boolean };
  /** Records read so far (the source's line count of this run). */
  records: number;
  nowMs: number;
}

const count = (n: number) => Math.round(n).toLocaleString('en');
const WAITS: Record<ShardWait, string> = {
  down: 'down',
  ejected: 'ejected',
  pushBack: 'push-back',
  slow: 'slow',
  cap: 'at cap',
};

/** `1:23`, `1:02:03`, or `?` when unknown. */
export function clock(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/** Megabytes (10⁶ bytes) per second, one decimal. */
function mbps(bytes: number, ms: number): string {
  return (bytes / 1000 / Math.max(1, ms)).toFixed(1);
}

/** Draws a load's progress: in place on a terminal, an entry every `logEveryMs` elsewhere. */
export class LoadProgress {
  readonly #out: NodeJS.WritableStream;
  readonly #tty: boolean;
  readonly #origins: readonly string[];
  readonly #totalBytes: number;
  /** Bytes read before this run (a resumed load starts past them). */
  readonly #startBytes: number;
  readonly #startMs: number;
  readonly #label: string;
  #lastMs: number;
  #last = { settled: 0, bytes: 0 };
  #drawn = false;
  /** The figures last given (the ingestion's heartbeat), drawn or not. */
  #latest: LoadFigures | undefined;

  constructor(
    out: NodeJS.WritableStream,
    o: {
      tty: boolean;
      origins: readonly string[];
      totalBytes: number;
      startBytes: number;
      startMs: number;
      label: string;
    },
    private readonly every = { drawMs: 250, logMs: 5_000 },
  ) {
    this.#out = out;
    this.#tty = o.tty;
    this.#origins = o.origins;
    this.#totalBytes = o.totalBytes;
    this.#startBytes = o.startBytes;
    this.#startMs = o.startMs;
    this.#label = o.label;
    this.#lastMs = o.startMs;
  }

  /** Draws if the interval has passed since the last line. */
  update(f: LoadFigures): void {
    this.#latest = f;
    const every = this.#tty ? this.every.drawMs : this.every.logMs;
    if (f.nowMs - this.#lastMs < every) return;
    const p = f.progress;
    const settled = p.written + p.failed + p.uncertain;
    const ms = f.nowMs - this.#lastMs;
    const rate = ((settled - this.#last.settled) * 1000) / Math.max(1, ms);
    const mb = mbps(p.bytes - this.#last.bytes, ms);
    this.#lastMs = f.nowMs;
    this.#last = { settled, bytes: p.bytes };
    if (this.#tty) {
      this.#out.write(`\r\x1b[2K${this.terminalLine(f, rate, mb)}`);
      this.#drawn = true;
    } else this.#out.write(`${wrap(this.logLine(f, rate, mb), '  ', 'clause')}\n`);
  }

  /**
   * Ends the redrawn line (before the summary is printed under it), drawn once more with the
   * last figures and the run's average rates.
   */
  finish(nowMs: number): void {
    const f = this.#latest;
    if (this.#drawn && f !== undefined) {
      const p = f.progress;
      const ms = nowMs - this.#startMs;
      const rate = ((p.written + p.failed + p.uncertain) * 1000) / Math.max(1, ms);
      this.#out.write(`\r\x1b[2K${this.terminalLine(f, rate, mbps(p.bytes, ms))}`);
    }
    if (this.#drawn) this.#out.write('\n');
    this.#drawn = false;
  }

  /** Writes a line of its own (a notice), below the redrawn one, which goes on after it. */
  notice(text: string): void {
    if (this.#drawn) this.#out.write('\r\x1b[2K');
    this.#out.write(`${wrap(text, '  ')}\n`);
    this.#drawn = false;
  }

  /** The terminal line: the head figures, then waits (if any) or shares, cut to fit. */
  terminalLine(f: LoadFigures, rate: number, mb: string, width = TERMINAL_WIDTH): string {
    const head = [
      this.#percent(f),
      `${count(rate)} rec/s`,
      `${mb} MB/s`,
      `ETA ${clock(this.#etaSeconds(f))}`,
    ].join('  ');
    // A shard at its cap is the load going as fast as the shards take it: not worth the room.
    const waits = this.#waits(f.progress)
      .filter(([, why]) => why !== WAITS.cap)
      .map(([i, why]) => `${i}:${why}`);
    const shares = this.#shares(f.progress);
    const tails =
      waits.length > 0
        ? [`wait ${waits.join(' ')}`, `wait ${waits.length} shards`]
        : [
            `share % ${shares.join(' ')}`,
            shares.length === 0 ? '' : `share % ${Math.min(...shares)}–${Math.max(...shares)}`,
          ];
    for (const tail of tails) {
      const line = tail === '' ? head : `${head}  ${tail}`;
      if (line.length <= width) return line;
    }
    return head.slice(0, width);
  }

  /** The log entry: every figure, labelled, before wrapping. */
  logLine(f: LoadFigures, rate: number, mb: string): string {
    const p = f.progress;
    const shares = this.#shares(p)
      .map((share, i) => `${i}:${share}`)
      .join(' ');
    const waits = this.#waits(p)
      .map(([i, why]) => `${i}:${why}`)
      .join(' ');
    return (
      `${this.#label}: ${this.#percent(f)} read, ${count(p.written)} written, ` +
      `${count(p.failed)} failed, ${count(p.uncertain)} uncertain, ${count(rate)} records/s, ` +
      `${mb} MB/s, ETA ${clock(this.#etaSeconds(f))}, ${count(p.held)} held, ` +
      `${count(p.retries)} retries; share % by shard ${shares}` +
      (waits === '' ? '' : `; waiting ${waits}`)
    );
  }

  #percent(f: LoadFigures): string {
    if (!f.read.exact) return `${count(f.records)} records`;
    if (this.#totalBytes === 0) return '100%';
    return `${((f.read.bytes * 100) / this.#totalBytes).toFixed(1)}%`;
  }

  /** Seconds left at the average read rate of this run; Infinity when not known. */
  #etaSeconds(f: LoadFigures): number {
    if (!f.read.exact) return Number.POSITIVE_INFINITY;
    const elapsed = (f.nowMs - this.#startMs) / 1000;
    const rate = (f.read.bytes - this.#startBytes) / Math.max(1e-3, elapsed);
    const left = this.#totalBytes - f.read.bytes;
    return left <= 0 ? 0 : rate <= 0 ? Number.POSITIVE_INFINITY : left / rate;
  }

  /** Each shard's share of the records written, %, in `--to` order. */
  #shares(p: IngestProgress): number[] {
    const written = this.#origins.map((id) => p.perShard[id] ?? 0);
    const total = written.reduce((a, b) => a + b, 0);
    return written.map((n) => Math.round((n * 100) / Math.max(1, total)));
  }

  #waits(p: IngestProgress): [number, string][] {
    const out: [number, string][] = [];
    this.#origins.forEach((id, i) => {
      const why = p.shards[id]?.waiting;
      if (why !== undefined) out.push([i, WAITS[why]]);
    });
    return out;
  }
}
