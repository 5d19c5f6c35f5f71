/**
 * The end of a load: what happened to its records, how long it took, where its dead letters and
 * checkpoint are — as text for a person (every line within 80 columns), or as one JSON object
 * for a script (`--json`). Its exit code too: 0 every record written, 1 some failed or are
 * uncertain (or the load stopped on an error), 3 stopped by a signal.
 */
import { messageOf } from '../base/errors.js';
import { redactText } from '../base/redact.js';
import type { IngestSummary } from '../ingest/types.js';
import type { Checkpoint } from '../sources/checkpoint.js';
import type { LoadCommand } from './ingest-args.js';
import { wrap } from './wrap.js';

/** How a load ended. */
export type LoadEnd =
  | { status: 'done' }
  | { status: 'stopped'; signal: 'SIGINT' | 'SIGTERM'; atOnce: boolean }
  | { status: 'error'; error: unknown };

/** Everything the summary says. */
export interface LoadReport {
  command: LoadCommand;
  end: LoadEnd;
  summary: IngestSummary<unknown>;
  /** Records that failed because the load stopped: not dead-lettered, read again on resume. */
  unsent: number;
  /** Records kept in the dead-letter file by this run. */
  deadLettered: number;
  durationMs: number;
  origins: readonly string[];
  files: readonly string[];
  deadLetter: string | undefined;
  checkpoint: { path: string; resumed: boolean; saved: Checkpoint | undefined } | undefined;
}

/** The exit code of a load that ended so. */
export function exitCode(r: LoadReport): 0 | 1 | 3 {
  if (r.end.status === 'stopped') return 3;
  if (r.end.status === 'error') return 1;
  return r.summary.failed - r.unsent + r.summary.uncertain > 0 ? 1 : 0;
}

const count = (n: number) => Math.round(n).toLocaleString('en');

/** The summary as JSON (see docs/durable-loads.md for its fields). */
export function jsonSummary(r: LoadReport): string {
  const s = r.summary;
  const seconds = r.durationMs / 1000;
  const end = r.end;
  const saved = r.checkpoint?.saved;
  return JSON.stringify({
    command: r.command,
    status: end.status,
    exitCode: exitCode(r),
    signal: end.status === 'stopped' ? end.signal : null,
    error: end.status === 'error' ? errorOf(end.error) : null,
    written: s.written,
    failed: s.failed - r.unsent,
    uncertain: s.uncertain,
    unsent: r.unsent,
    resent: s.resent,
    retries: s.retries,
    batches: s.batches,
    bytes: s.bytes,
    transit: { ...s.transit },
    durationMs: Math.round(r.durationMs),
    recordsPerSecond: Math.round(s.written / Math.max(1e-3, seconds)),
    perShard: Object.fromEntries(r.origins.map((id) => [id, s.perShard[id] ?? 0])),
    files: r.files,
    deadLetter: r.deadLetter === undefined ? null : { path: r.deadLetter, records: r.deadLettered },
    checkpoint:
      r.checkpoint === undefined
        ? null
        : {
            path: r.checkpoint.path,
            resumed: r.checkpoint.resumed,
            records: saved?.records ?? 0,
            written: saved?.written ?? 0,
            failed: saved?.failed ?? 0,
            uncertain: saved?.uncertain ?? 0,
            position: saved?.position ?? null,
          },
  });
}

/** The summary as text, every line within 80 columns. */
export function textSummary(r: LoadReport): string {
  const s = r.summary;
  const seconds = r.durationMs / 1000;
  const lines: string[] = [];
  const end = r.end;
  const took = `${seconds.toFixed(1)} s`;
  if (end.status === 'done') lines.push(`shardwise ${r.command}: done in ${took}`);
  else if (end.status === 'stopped') {
    lines.push(
      `shardwise ${r.command}: stopped by ${end.signal} after ${took}${end.atOnce ? ' (at once)' : ''}`,
    );
  } else {
    lines.push(
      `shardwise ${r.command}: stopped after ${took}: ${redactText(messageOf(end.error))}`,
    );
  }
  const rate = s.written / Math.max(1e-3, seconds);
  const mb = (s.bytes / 1e6 / Math.max(1e-3, seconds)).toFixed(1);
  // Entries start at column 0; only a wrapped entry's continuation is indented.
  const figure = (label: string, n: number, note = '') =>
    `${label.padEnd(12)}${count(n).padStart(11)}${note === '' ? '' : `  ${note}`}`;
  lines.push(figure('written', s.written, `${count(rate)} records/s, ${mb} MB/s`));
  if (s.transit.wire !== s.transit.raw && s.transit.raw > 0) {
    const ratio = (s.transit.wire / s.transit.raw).toFixed(3);
    lines.push(
      figure('sent bytes', s.transit.wire, `${ratio}x of ${count(s.transit.raw)} (compressed)`),
    );
  }
  lines.push(figure('failed', s.failed - r.unsent));
  lines.push(
    figure('uncertain', s.uncertain, s.uncertain > 0 ? 'sent, no answer: may be stored' : ''),
  );
  lines.push(figure('resent', s.resent, s.resent > 0 ? 'sends that may be duplicates' : ''));
  if (r.unsent > 0) lines.push(figure('not settled', r.unsent, 'read again on resume'));
  const perShard = r.origins.map((id, i) => `${i}:${count(s.perShard[id] ?? 0)}`).join(' ');
  lines.push(wrap(`per shard  ${perShard}`, '           '));
  if (r.deadLetter !== undefined) {
    lines.push(wrap(`dead letters: ${count(r.deadLettered)} in ${r.deadLetter}`));
  } else if (s.failed - r.unsent + s.uncertain > 0) {
    lines.push(wrap('dead letters: none kept (--dead-letter FILE keeps the records that fail)'));
  }
  const c = r.checkpoint;
  if (c !== undefined) {
    const at = c.saved?.position;
    const where =
      at === undefined
        ? 'at the start'
        : `after line ${count(at.line)} of ${at.file}${at.fileIndex > 0 ? ` (file ${at.fileIndex + 1})` : ''}`;
    lines.push(wrap(`checkpoint: ${c.path}, ${where}`));
    if (c.saved !== undefined) {
      lines.push(
        `the load so far: ${count(c.saved.written)} written, ${count(c.saved.failed)} failed, ${count(c.saved.uncertain)} uncertain`,
      );
    }
    if (end.status !== 'done') {
      lines.push('run the same command again to resume from the checkpoint');
    }
  } else if (end.status === 'stopped') {
    lines.push('no --checkpoint: a run again starts from the beginning');
  }
  return lines.join('\n');
}

/** An error as the JSON summary says it: its code (else its name) and its message, redacted. */
function errorOf(error: unknown): { code: string; message: string } {
  const code = (error as { code?: unknown } | null)?.code;
  const name = (error as { name?: unknown } | null)?.name;
  return {
    code: typeof code === 'string' ? code : typeof name === 'string' ? name : 'Error',
    message: redactText(messageOf(error)),
  };
}
