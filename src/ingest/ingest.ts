/**
 * `ingest(source, options)`: takes records from an iterable or async iterable into a sink (one
 * run per record, or batches) until the source ends, its signal aborts, the balancer closes, the
 * source throws or a callback throws — then waits until every record taken has settled, written
 * or failed, and resolves with the account, or rejects with an `IngestError` carrying it.
 */
import { BalancerClosedError, ConfigError, describe } from '../base/errors.js';
import { duration, fn } from '../base/validate.js';
import { positionReader } from '../sources/position.js';
import { checkDurable, DURABLE_KEYS, Durability, type DurableOptions } from './durable.js';
import { IngestError, type IngestStop } from './errors.js';
import { type FailureHooks, Ledger } from './ledger.js';
import { checkRecordOptions, checkSource } from './options.js';
import type { Sink } from './sink.js';
import {
  type IngestExtras,
  type IngestOptions,
  type IngestSummary,
  ON_CLOSE,
  type RunnerLike,
} from './types.js';
import { callerSink } from './write-stream.js';

/** The option names `ingest` adds to those of the write stream. */
export const INGEST_EXTRA_KEYS = [
  'onProgress',
  'progressMs',
  'progressIntervalMs',
  'signal',
  ...DURABLE_KEYS,
] as const;

/** What `ingest` adds to a write stream's options, checked. */
export interface IngestExtrasChecked {
  onProgress: IngestExtras<any>['onProgress'];
  signal: AbortSignal | undefined;
  progressMs: number;
  durable: DurableOptions;
}

/**
 * `onProgress`, `progressMs` (or its former name `progressIntervalMs`), `signal` and the durable
 * options (`deadLetter`, `deadLetterUncertain`, `checkpoint`, `from`, `onCheckpoint`), checked.
 */
export function checkIngestExtras(field: string, options: IngestExtras<any>): IngestExtrasChecked {
  if (options.onProgress !== undefined) fn(`${field}.onProgress`, options.onProgress);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new ConfigError(`${field}.signal`, 'must be an AbortSignal', options.signal);
  }
  if (options.progressMs !== undefined && options.progressIntervalMs !== undefined) {
    throw new ConfigError(
      `${field}.progressIntervalMs`,
      'is the former name of progressMs: give one of them',
      options.progressIntervalMs,
    );
  }
  const given = options.progressMs ?? options.progressIntervalMs;
  const name = options.progressMs !== undefined ? 'progressMs' : 'progressIntervalMs';
  return {
    onProgress: options.onProgress,
    signal: options.signal,
    // A heartbeat of 0 ms would spin: at least 1 ms between two reports.
    progressMs: given === undefined ? 1_000 : duration(`${field}.${name}`, given, true),
    durable: checkDurable(field, options as Record<string, unknown>),
  };
}

/**
 * Sends every record of `source` through the balancer (see {@link IngestOptions}). Never rejects
 * for a failed record: those are listed in `summary.failures`.
 */
export async function ingest<T, Rec>(
  runner: RunnerLike<T>,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  options: IngestOptions<T, Rec>,
): Promise<IngestSummary<Rec>> {
  const o = checkRecordOptions<T, Rec>('ingest', options, INGEST_EXTRA_KEYS);
  checkSource(source);
  const extras = checkIngestExtras('ingest', options);
  return run(runner, 'ingest', source, extras, o, (ledger) =>
    callerSink('ingest', runner, ledger, o),
  );
}

/**
 * Opens what the ingestion keeps durable (its dead letters first: a file that cannot be written
 * rejects before a record is read), builds its ledger and sink, and drives it.
 */
export async function run<T, Rec>(
  runner: RunnerLike<T>,
  field: string,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  extras: IngestExtrasChecked,
  hooks: FailureHooks<Rec>,
  sink: (ledger: Ledger<Rec>) => Sink<Rec>,
): Promise<IngestSummary<Rec>> {
  const ledger = new Ledger<Rec>(runner, {
    onProgress: extras.onProgress,
    progressMs: extras.progressMs,
    onFailed: hooks.onFailed,
    onUncertain: hooks.onUncertain,
    keepFailures: hooks.keepFailures,
  });
  const durability = await Durability.open(
    field,
    extras.durable,
    ledger as Ledger<unknown>,
    runner.clock,
    source as object,
  );
  return drive(runner, source, sink(ledger), ledger, extras.signal, durability);
}

/**
 * The loop every ingestion shares (the transports' too): take a record, hand it to the sink, wait
 * for room; stop on the end of the source or what interrupts it; wait for every record taken.
 */
export async function drive<T, Rec>(
  runner: RunnerLike<T>,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  sink: Sink<Rec>,
  ledger: Ledger<Rec>,
  signal: AbortSignal | undefined,
  durability?: Durability,
): Promise<IngestSummary<Rec>> {
  let stop: { kind: IngestStop; cause: unknown } | undefined;
  // A sync iterable is read without a promise per record; an async one is awaited.
  const sync = !(Symbol.asyncIterator in source);
  let iterator: Iterator<Rec> | AsyncIterator<Rec> | undefined;
  let finished = false;
  try {
    iterator = sync
      ? (source as Iterable<Rec>)[Symbol.iterator]()
      : (source as AsyncIterable<Rec>)[Symbol.asyncIterator]();
  } catch (error) {
    stop = { kind: 'source', cause: error };
  }
  // A source that reports positions gives the watermark its position (checkpoints); it must
  // start where a resumed load's `from` says. Checked before any record is taken.
  const read =
    durability?.tracking === true && iterator !== undefined
      ? positionReader(source, iterator)
      : undefined;
  try {
    durability?.start(read);
  } catch (error) {
    if (iterator?.return !== undefined) {
      try {
        const returned = iterator.return();
        if (returned instanceof Promise) returned.catch(() => {});
      } catch {}
    }
    await ledger.idle();
    ledger.close();
    throw error;
  }
  const watermark = ledger.watermark;
  let last = -1;
  /**
   * Why the ingestion must stop now, if it must: the signal, the balancer's close, a callback,
   * a dead letter or a checkpoint that could not be kept.
   */
  const stopped = (): { kind: IngestStop; cause: unknown } | undefined => {
    if (signal?.aborted) return { kind: 'aborted', cause: signal.reason };
    if (runner.closed) return { kind: 'closed', cause: new BalancerClosedError() };
    if (ledger.callbackError !== undefined) {
      return { kind: 'callback', cause: ledger.callbackError.error };
    }
    if (ledger.deadLetterError !== undefined) {
      return { kind: 'deadLetter', cause: ledger.deadLetterError.error };
    }
    if (durability?.error !== undefined) {
      return { kind: 'checkpoint', cause: durability.error.error };
    }
    return undefined;
  };
  const interrupted = sync ? undefined : interruption(runner, ledger, signal);
  while (iterator !== undefined && stop === undefined) {
    stop = stopped();
    if (stop !== undefined) break;
    let next: IteratorResult<Rec>;
    let done: boolean;
    let value: Rec;
    try {
      if (sync) next = (iterator as Iterator<Rec>).next();
      else {
        const pending = (iterator as AsyncIterator<Rec>).next();
        next = await interrupted!.race(pending);
        if (next === INTERRUPTED) {
          // An abort, a close or a callback's throw came while the source was still producing:
          // a record it yields later is reported failed with that cause, never dropped — counted
          // in the summary while it is open, else (the summary is final) to `onFailed` alone.
          const why = stopped()!;
          Promise.resolve(pending).then(
            (late) => {
              if (typeof late !== 'object' || late === null || late.done) return;
              ledger.take();
              ledger.failUnsent(late.value, why.cause);
            },
            () => {},
          );
          stop = why;
          break;
        }
      }
      // Read here, so that a result that is not an object (or a getter that throws) stops the
      // ingestion as a source error, as `for await` would, after what was taken settles.
      if (typeof next !== 'object' || next === null) {
        throw new TypeError(
          `the source's iterator returned ${describe(next)}, not { done, value }`,
        );
      }
      done = next.done === true;
      value = next.value;
    } catch (error) {
      stop = { kind: 'source', cause: error };
      finished = true; // a source that threw is done: do not ask it to return
      break;
    }
    if (done) {
      finished = true;
      break;
    }
    const seq = ledger.take();
    if (signal?.aborted) {
      // Taken, then the abort seen: the record is reported failed, never dropped (nor sent: a
      // resumed load reads it again).
      ledger.failUnsent(value, signal.reason);
      stop = { kind: 'aborted', cause: signal.reason };
      break;
    }
    sink.add(value, seq);
    // The position after every 64th record: what a checkpoint can stand at.
    if (read !== undefined && (seq & 63) === 63) watermark!.sample(seq, read());
    last = seq;
    const wait = sink.wait();
    if (wait !== undefined) await wait;
  }
  // The position after the last record taken (a source that ended: the end of its files).
  if (read !== undefined && last >= 0 && (last & 63) !== 63) watermark!.sample(last, read());
  interrupted?.dispose();
  if (!finished && iterator?.return !== undefined) {
    // Let the source release what it holds (a file, a cursor); its answer is not awaited past
    // a settled promise, and its failure does not hide why the ingestion stopped.
    try {
      const returned = iterator.return();
      if (returned instanceof Promise) returned.catch(() => {});
    } catch {}
  }
  sink.end();
  await ledger.idle();
  // Dead letters flushed, then the last checkpoint saved: it never passes a record not yet kept.
  await durability?.close();
  const summary = ledger.close();
  // What failed while the last records settled: a callback, a dead letter, the last checkpoint.
  if (stop === undefined && ledger.callbackError !== undefined) {
    stop = { kind: 'callback', cause: ledger.callbackError.error };
  }
  if (stop === undefined && ledger.deadLetterError !== undefined) {
    stop = { kind: 'deadLetter', cause: ledger.deadLetterError.error };
  }
  if (stop === undefined && durability?.error !== undefined) {
    stop = { kind: 'checkpoint', cause: durability.error.error };
  }
  if (stop !== undefined) throw new IngestError<Rec>(stop.kind, stop.cause, summary);
  return summary;
}

const INTERRUPTED = { done: false, value: undefined } as IteratorResult<never>;

/**
 * Races each read of the source against an abort of `signal`, the balancer's close or a
 * callback's throw (resolving with {@link INTERRUPTED}), so a source with nothing to give (a
 * queue consumer on an empty queue) does not hold the ingestion; `dispose` stops listening.
 * Each read gets a promise of its own: `Promise.race` against one long-lived promise would keep a
 * reaction per read on it — every record's result — until the ingestion ends.
 */
function interruption<T, Rec>(
  runner: RunnerLike<T>,
  ledger: Ledger<Rec>,
  signal: AbortSignal | undefined,
): {
  race: (read: Promise<IteratorResult<Rec>>) => Promise<IteratorResult<Rec>>;
  dispose: () => void;
} {
  let fired = false;
  let waiting: ((result: IteratorResult<Rec>) => void) | undefined;
  const wake = (): void => {
    fired = true;
    const resolve = waiting;
    waiting = undefined;
    resolve?.(INTERRUPTED);
  };
  signal?.addEventListener('abort', wake, { once: true });
  const unlisten = runner[ON_CLOSE]?.(wake);
  ledger.onCallbackError = wake;
  return {
    race: (read) => {
      if (fired) return Promise.resolve(INTERRUPTED);
      return new Promise<IteratorResult<Rec>>((resolve, reject) => {
        waiting = resolve;
        // `next()` of a hand-written iterator may return a plain result, not a promise.
        Promise.resolve(read).then(
          (result) => {
            waiting = undefined;
            resolve(result);
          },
          (error: unknown) => {
            waiting = undefined;
            reject(error);
          },
        );
      });
    },
    dispose: () => {
      signal?.removeEventListener('abort', wake);
      unlisten?.();
      ledger.onCallbackError = undefined;
    },
  };
}
