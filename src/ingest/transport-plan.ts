/**
 * What the transports' record ingestion shares (`http.ingest`, `s3.ingest` and their write
 * streams): a plan (the checked options, and how to build the batch sink) driven the same way,
 * the choice of encoding, and a caller's own `encode` called and checked.
 */
import { ConfigError, messageOf } from '../base/errors.js';
import { checkKnownKeys, checkObject } from '../base/validate.js';

import { BatchSink } from './batch-sink.js';
import { jsonArrayEncoder, ndjsonEncoder, type RecordEncoder } from './encoders.js';
import { checkIngestExtras, run } from './ingest.js';
import type { FailureHooks, Ledger } from './ledger.js';
import {
  type BatchDefaults,
  checkCommon,
  checkKeepsRecords,
  checkSource,
  type ResolvedBatch,
  resolveBatch,
} from './options.js';
import type { BatchPrepare, BatchSender } from './sender.js';
import type { Sink } from './sink.js';
import type {
  BatchOptions,
  CommonRecordOptions,
  IngestExtras,
  IngestSummary,
  RecordWriteStream,
  RunnerLike,
} from './types.js';
import { LedgerWriteStream } from './write-stream.js';

/** A transport's checked options: who hears of failed records, and the sink that sends batches. */
export interface TransportPlan<Rec> extends FailureHooks<Rec> {
  sink(ledger: Ledger<Rec>): Sink<Rec>;
  /**
   * Resolves once the transport can send (a codec loaded); a rejection stops the ingestion
   * before any record is read. Absent: nothing to wait for.
   */
  start?: (() => Promise<void>) | undefined;
}

/** How a transport readies its batches: once per batch before its run, after a start. */
export interface BatchReadying<Rec> {
  prepare: BatchPrepare<Rec>;
  start: () => Promise<void>;
}

/** A caller's own body builder, given the batch's records. */
export type CustomEncode<Rec> = (records: Rec[]) => string | Uint8Array;

/** What every transport's record options have: the common ones, `encode` and `batch`. */
export interface TransportRecordOptions<Rec> extends CommonRecordOptions<Rec> {
  encode?: 'ndjson' | 'json' | CustomEncode<Rec>;
  batch?: BatchOptions<Rec>;
}

/** Those options, checked: the common ones, the encoding and the batching. */
export interface ReadRecordOptions<Rec> extends ReturnType<typeof checkCommon<Rec>> {
  encoder: RecordEncoder<Rec> | undefined;
  custom: CustomEncode<Rec> | undefined;
  batch: ResolvedBatch<Rec>;
}

/**
 * Checks a transport's record options as far as all transports share them — a plain object of
 * known `keys`, the common options, `encode`, `batch` (with the transport's `defaults`) — and
 * returns them read; the transport checks its own fields.
 */
export function readRecordOptions<Rec>(
  field: string,
  options: unknown,
  keys: readonly string[],
  defaults: BatchDefaults,
): ReadRecordOptions<Rec> {
  checkObject(field, options);
  checkKnownKeys(field, options, keys);
  const o = options as TransportRecordOptions<Rec>;
  const common = checkCommon(field, o);
  const { encoder, custom } = encodingOf<Rec>(field, o.encode);
  const batch = resolveBatch<Rec>(`${field}.batch`, o.batch ?? {}, defaults, o.bytes);
  if (encoder === undefined) {
    checkKeepsRecords(field, batch as ResolvedBatch<unknown>, '`encode` is given the records');
  }
  return { ...common, encoder, custom, batch };
}

/**
 * The plan of a transport's calls: each sink sends its batches with a sender of its own, each
 * batch readied first when the transport says how (`readying`: its body compressed).
 */
export function batchPlan<T, Rec>(
  runner: RunnerLike<T>,
  field: string,
  read: ReadRecordOptions<Rec>,
  sender: () => BatchSender<T, Rec>,
  readying?: BatchReadying<Rec>,
): TransportPlan<Rec> {
  return {
    onFailed: read.onFailed,
    onUncertain: read.onUncertain,
    keepFailures: read.keepFailures,
    start: readying?.start,
    sink: (ledger) =>
      new BatchSink<T, Rec>(runner, ledger, {
        field,
        key: read.key,
        idempotent: read.idempotent,
        batch: read.batch,
        deliveryTimeoutMs: read.deliveryTimeoutMs,
        ordered: read.ordered,
        encoder: read.encoder,
        send: sender(),
        prepare: readying?.prepare,
      }),
  };
}

/** True when options carry no `send`: the transport builds each batch's call itself. */
export function buildsItsOwnCalls(options: unknown): boolean {
  return (
    typeof options === 'object' &&
    options !== null &&
    (options as { send?: unknown }).send === undefined
  );
}

/**
 * Runs an ingestion of `source` on a transport's plan; a bad option rejects, never throws, and
 * so does a plan that cannot start (a codec missing) — before any record is read.
 */
export function ingestWithPlan<T, Rec>(
  field: string,
  runner: RunnerLike<T>,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  options: IngestExtras<Rec> | undefined,
  plan: (field: string) => TransportPlan<Rec>,
): Promise<IngestSummary<Rec>> {
  try {
    checkSource(source);
    const extras = checkIngestExtras(field, options ?? {});
    const p = plan(field);
    const go = (): Promise<IngestSummary<Rec>> =>
      run(runner, field, source, extras, p, (ledger) => p.sink(ledger));
    return p.start === undefined ? go() : p.start().then(go);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * A write stream on a transport's plan. A plan that cannot start errors the stream before it
 * takes a record (the records written meanwhile are reported, not sent).
 */
export function writeStreamWithPlan<T, Rec>(
  runner: RunnerLike<T>,
  plan: TransportPlan<Rec>,
): RecordWriteStream<Rec> {
  return new LedgerWriteStream<T, Rec>(runner, plan, (ledger) => plan.sink(ledger), plan.start);
}

/**
 * `encode` read: `'ndjson'` (the default) and `'json'` are encoders of ours, written into the
 * batch as records arrive; a function is the caller's, called with the batch's records.
 */
function encodingOf<Rec>(
  field: string,
  encode: unknown,
): { encoder: RecordEncoder<Rec> | undefined; custom: CustomEncode<Rec> | undefined } {
  const e = encode ?? 'ndjson';
  if (e === 'ndjson') return { encoder: ndjsonEncoder<Rec>(), custom: undefined };
  if (e === 'json') return { encoder: jsonArrayEncoder<Rec>(), custom: undefined };
  if (typeof e === 'function') return { encoder: undefined, custom: e as CustomEncode<Rec> };
  throw new ConfigError(`${field}.encode`, "must be 'ndjson', 'json' or a function", e);
}

/** A custom `encode`: its output checked; a throw fails the batch without a retry (it would throw again). */
export function encodeWith<Rec>(
  field: string,
  encode: CustomEncode<Rec>,
  records: Rec[],
): string | Uint8Array {
  let body: unknown;
  try {
    body = encode(records);
  } catch (error) {
    throw notRetryable(`${field}.encode() threw: ${messageOf(error)}`, error);
  }
  if (typeof body !== 'string' && !(body instanceof Uint8Array)) {
    throw new ConfigError(`${field}.encode`, 'must return a string or a Uint8Array', body);
  }
  return body;
}

/** An error that fails its batch for good: the same call would fail the same way. */
export function notRetryable(message: string, cause: unknown): Error {
  return Object.assign(new Error(message, { cause }), { retryable: false });
}
