/**
 * One load, as `shardwise ingest` and `shardwise replay` run it: the files checked, the
 * checkpoint loaded (a resume), a source with positions opened after it, one `http.ingest` with
 * the dead letters and checkpoints asked for, its progress drawn, signals heard (a graceful stop,
 * then one at once), and the summary printed. Resolves with the exit code.
 */
import { stat } from 'node:fs/promises';
import { ConfigError, isShardwiseError, messageOf } from '../base/errors.js';
import { systemClock } from '../base/runtime.js';
import { readDeadLetters } from '../dead-letters/read.js';
import { createHttpBalancer } from '../http/index.js';
import type { HttpIngestOptions } from '../http/ingest.js';
import { IngestError } from '../ingest/errors.js';
import type { IngestSummary } from '../ingest/types.js';
import { type Checkpoint, loadCheckpoint } from '../sources/checkpoint.js';
import { readJsonl } from '../sources/jsonl.js';
import { type PositionedSource, SOURCE_POSITION } from '../sources/position.js';
import { UsageError } from './args.js';
import { BytesRead, type InputFile } from './bytes-read.js';
import type { LoadSettings } from './ingest-args.js';
import { LoadProgress } from './load-progress.js';
import {
  exitCode,
  jsonSummary,
  type LoadEnd,
  type LoadReport,
  textSummary,
} from './load-summary.js';
import { type SignalHost, StopOnSignals } from './stop-signals.js';
import { wrap } from './wrap.js';

/** Where a command writes, what signals it hears, and how it leaves at once. */
export interface CommandIo {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  signals: SignalHost;
  /** Ends the process now (a third Ctrl-C). */
  exit(code: number): void;
}

/** The abort reason of a stop by signal (the record taken then fails with it, unsent). */
class StopRequested extends Error {
  constructor(signal: string) {
    super(`stopped by ${signal}`);
    this.name = 'StopRequested';
  }
}

/** Runs the load `s` describes; resolves with the exit code. */
export async function runLoad(s: LoadSettings, io: CommandIo): Promise<number> {
  const inputs = await inputFiles(s.files);
  const from = await resumeFrom(s);
  const source = openSource(s, from);
  const bytesRead = new BytesRead(inputs);
  const startBytes = from?.position === undefined ? 0 : bytesRead.startingAt(from.position);
  const http = createHttpBalancer({
    origins: s.origins,
    picker: s.picker(),
    ...(s.timeoutMs === undefined ? {} : { timeoutMs: s.timeoutMs }),
  });
  const startMs = systemClock.now();
  const tty = (io.err as { isTTY?: boolean }).isTTY === true;
  const progress = new LoadProgress(io.err, {
    tty,
    origins: s.origins,
    totalBytes: bytesRead.total,
    startBytes,
    startMs,
    label: s.command,
  });
  io.err.write(`${introduction(s, inputs, from)}\n`);

  const controller = new AbortController();
  let reason: StopRequested | undefined;
  let atOnce = false;
  const stop = new StopOnSignals(io.signals, {
    graceful: (signal) => {
      reason = new StopRequested(signal);
      controller.abort(reason);
      progress.notice(
        `${signal}: stopping — no record more is read, what is in flight settles, the checkpoint is saved (again to stop at once)`,
      );
    },
    immediate: (signal) => {
      atOnce = true;
      progress.notice(`${signal}: stopping at once — what was in flight is sent again on resume`);
      http.close({ drain: false }).catch(() => {});
    },
    leave: (signal) => {
      progress.notice(`${signal}: leaving now`);
      io.exit(3);
    },
  });

  let unsent = 0;
  let deadLettered = 0;
  const stopped = (error: unknown) =>
    (reason !== undefined && error === reason) || isShardwiseError(error, 'SHARDWISE_CLOSED');
  const options: HttpIngestOptions<unknown> = {
    path: s.path,
    headers: s.headers,
    ...(s.compression === undefined ? {} : { compression: s.compression }),
    // Only the bytes each record is sent as are kept: a failed one is given back from them (a
    // line as the same line), which holds less and collects less garbage at high rates.
    batch: { ...s.batch, keepRecords: false },
    key: s.key?.of,
    deliveryTimeoutMs: s.deliveryTimeoutMs,
    signal: controller.signal,
    progressMs: 250,
    onProgress: (p) => {
      const at = source[SOURCE_POSITION]();
      progress.update({
        progress: p,
        read: bytesRead.at(at),
        records: p.written + p.failed + p.uncertain + p.held,
        nowMs: systemClock.now(),
      });
    },
    onFailed: (_record, error) => {
      if (stopped(error)) unsent++;
      else if (s.deadLetter !== undefined) deadLettered++;
    },
    onUncertain: () => {
      if (s.deadLetterUncertain) deadLettered++;
    },
    // The dead-letter file keeps them; memory holds none past the first.
    keepFailures: 1,
    deadLetter: s.deadLetter === undefined ? undefined : { path: s.deadLetter },
    deadLetterUncertain: s.deadLetterUncertain,
    checkpoint: s.checkpoint,
    from,
  };

  let summary: IngestSummary<unknown>;
  let end: LoadEnd | undefined;
  try {
    summary = await http.ingest(source, options);
  } catch (error) {
    if (!(error instanceof IngestError)) throw openingError(s, error);
    summary = error.summary;
    if (error.kind === 'aborted' || error.kind === 'closed') {
      // Stopped by a signal: told below.
    } else if (error.kind === 'source' && error.cause instanceof ConfigError) {
      // The checkpoint's place is not in the files any more: they changed since it was saved.
      throw new UsageError(
        `--checkpoint ${s.checkpoint?.path} does not fit the files: ${messageOf(error.cause)}`,
      );
    } else end = { status: 'error', error: error.cause };
  } finally {
    stop.dispose();
    progress.finish(systemClock.now());
    await http.close().catch(() => {});
  }
  // A signal stops the load even once the files are read (the ingestion then ends without an
  // error, what was in flight settled — or abandoned by a second signal).
  end ??=
    reason === undefined
      ? { status: 'done' }
      : { status: 'stopped', signal: stop.first ?? 'SIGINT', atOnce };
  const report: LoadReport = {
    command: s.command,
    end,
    summary,
    unsent,
    deadLettered,
    durationMs: systemClock.now() - startMs,
    origins: s.origins,
    files: s.files,
    deadLetter: s.deadLetter,
    checkpoint:
      s.checkpoint === undefined
        ? undefined
        : {
            path: s.checkpoint.path,
            resumed: from !== undefined,
            saved: await loadCheckpoint(s.checkpoint.path).catch(() => undefined),
          },
  };
  const text = textSummary(report);
  if (s.json) {
    io.err.write(`${text}\n`);
    io.out.write(`${jsonSummary(report)}\n`);
  } else io.out.write(`${text}\n`);
  return exitCode(report);
}

/** The files, each a readable file: its size, and whether it is gzipped. */
async function inputFiles(files: readonly string[]): Promise<InputFile[]> {
  return Promise.all(
    files.map(async (path) => {
      let info: Awaited<ReturnType<typeof stat>>;
      try {
        info = await stat(path);
      } catch (error) {
        throw new UsageError(`cannot read ${path}: ${messageOf(error)}`);
      }
      if (!info.isFile()) throw new UsageError(`${path} is not a file`);
      return { path, bytes: info.size, gzip: /\.gz$/i.test(path) };
    }),
  );
}

/** The checkpoint to resume from, if `--checkpoint` names one that exists. */
async function resumeFrom(s: LoadSettings): Promise<Checkpoint | undefined> {
  if (s.checkpoint === undefined) return undefined;
  try {
    return await loadCheckpoint(s.checkpoint.path);
  } catch (error) {
    throw new UsageError(`--checkpoint: ${messageOf(error)}`);
  }
}

/** The source of the command, positioned after `from`. */
function openSource(
  s: LoadSettings,
  from: Checkpoint | undefined,
): AsyncIterable<unknown> & PositionedSource {
  try {
    return s.command === 'ingest'
      ? readJsonl(s.files, { from })
      : readDeadLetters(s.files, { from });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new UsageError(
      `--checkpoint ${s.checkpoint?.path} was saved by a load of other files: ${messageOf(error)}`,
    );
  }
}

/** An error before any record was read: a dead-letter file that cannot be opened is the flag's. */
function openingError(s: LoadSettings, error: unknown): unknown {
  if (isShardwiseError(error, 'SHARDWISE_DEAD_LETTER')) {
    return new UsageError(`--dead-letter ${s.deadLetter}: ${messageOf(error)}`);
  }
  return error;
}

/** The lines printed before the load starts: what goes where, and where it resumes. */
function introduction(
  s: LoadSettings,
  inputs: readonly InputFile[],
  from: Checkpoint | undefined,
): string {
  const bytes = inputs.reduce((sum, f) => sum + f.bytes, 0);
  const what = `${inputs.length} file${inputs.length === 1 ? '' : 's'} (${(bytes / 1e6).toFixed(1)} MB)`;
  const key = s.key === undefined ? '' : `, keyed by ${s.key.field}`;
  const lines = [
    `shardwise ${s.command}: ${what} → ${s.origins.length} shard${s.origins.length === 1 ? '' : 's'} with ${s.pickerName}${key}, batches of ${s.batch.maxRecords}`,
    `shards: ${s.origins.map((origin, i) => `${i} ${origin}`).join(', ')}`,
  ];
  if (from !== undefined) {
    const at = from.position;
    lines.push(
      at === undefined
        ? `resuming from the start (checkpoint ${s.checkpoint?.path})`
        : `resuming after line ${at.line.toLocaleString('en')} of ${at.file} (checkpoint ${s.checkpoint?.path})`,
    );
  }
  return lines.map((line) => wrap(line, '  ', 'clause')).join('\n');
}
