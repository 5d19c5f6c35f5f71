/**
 * The shapes of record ingestion (`ingest`, `createWriteStream`): what a caller passes and what it
 * gets back. Types only: the implementations in this folder import them, never the reverse.
 */
import type { Writable } from 'node:stream';
import type { RunContext } from '../admission/run.js';
import type { Clock, Key, Picker, RandomSource, ShardState, TransitBytes } from '../base/types.js';
import type { DeadLetterOption } from '../dead-letters/types.js';
import type { RetryBudgetOptions } from '../retry/budget.js';
import type { ResolvedRetryOptions, RetryOptions } from '../retry/options.js';
import type { Checkpoint } from '../sources/checkpoint.js';
import type { SourcePosition } from '../sources/position.js';

/** How an ingestion hears that its balancer closed (a symbol: not part of the Balancer's API). */
export const ON_CLOSE: unique symbol = Symbol('shardwise.onClose');
/** What an ingestion reads of its balancer beyond the public API (a symbol, like `ON_CLOSE`). */
export const INGEST_VIEW: unique symbol = Symbol('shardwise.ingestView');

/** The balancer as an ingestion sees it: its settings, and whether a shard can take work now. */
export interface IngestView {
  /** The balancer's `retry`, resolved: batches inherit it (`batch.retry` overrides). */
  readonly retry: ResolvedRetryOptions | false;
  /** The balancer's `deliveryTimeoutMs`: records inherit it (the ingestion's own overrides). */
  readonly deliveryTimeoutMs: number;
  /** Keyed runs keep to their home shard (a keyed picker, strict affinity). */
  readonly strict: boolean;
  /** Why the balancer would start no attempt on `shard` now, or undefined when it would. */
  blocked(shard: ShardState<unknown>): 'ejected' | 'pushback' | 'capped' | undefined;
}

/** What `ingest` and the write stream need of a balancer (narrow, so this folder imports no Balancer). */
export interface RunnerLike<T> {
  /** Calls `listener` once when `close()` is called; returns the means to stop listening. */
  [ON_CLOSE]?(listener: () => void): () => void;
  [INGEST_VIEW](): IngestView;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly picker: Picker;
  /** The membership, a new array whenever it changes (batches compare it to re-check homes). */
  readonly shards: readonly ShardState<T>[];
  /** True once the balancer was closed: no run is admitted any more. */
  readonly closed: boolean;
  run<R>(
    fn: (shard: ShardState<T>, ctx: RunContext) => Promise<R>,
    options?: {
      key?: Key;
      idempotent?: boolean;
      bytes?: number;
      deliveryTimeoutMs?: number;
      retry?: RetryOptions | false;
    },
  ): Promise<R>;
  ready(): Promise<void>;
  stats(): { queued: number; inFlight: number };
  /** The id of `key`'s home shard under a keyed picker, else undefined. */
  homeOf(key: Key): string | undefined;
}

/** Sends one record to the shard the balancer picked. */
export type SendFn<T, Rec> = (
  shard: ShardState<T>,
  record: Rec,
  ctx: RunContext,
) => Promise<unknown>;

/** One record of a batch that the shard did not write. */
export interface RecordFailure {
  /** The record's position in the `records` array given to that `send`. */
  index: number;
  /** Why (reported with the record if it is not retried). */
  error?: unknown;
  /** Worth sending again, in a later batch (default true). */
  retryable?: boolean;
}

/**
 * What a batch `send` may resolve with: the records the shard refused (as the Elasticsearch bulk
 * API and Kinesis `PutRecords` report them). Nothing, or no `failed`, means every record was
 * written.
 */
export interface BatchResult {
  failed?: readonly RecordFailure[];
}

/**
 * What a batch `send` resolves with: a {@link BatchResult}, or nothing (an `async` function that
 * returns nothing resolves with `void`, hence its place here).
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a send written as `async () => { await post(…) }` resolves with void
export type BatchSendResult = BatchResult | undefined | void;

/**
 * What a batch `send` receives besides the shard and the records: the attempt's context, and the
 * batch's id.
 */
export interface BatchContext extends RunContext {
  /**
   * The batch's id: the same for every send of these records (its retries), new when records
   * leave it (a partial failure, a split). A deduplicating server keyed on it stores a retried
   * batch once (`http.ingest` sends it as `Idempotency-Key`).
   */
  readonly batchId: string;
}

/**
 * Sends one batch to the shard the balancer picked. The `records` array is the batch's: read it,
 * do not keep or change it. Throwing fails the whole batch (retried whole, like any run, when
 * the ingestion is idempotent); an error may say what became of the records — `uncertain: true`
 * (sent, no answer), `notSent: true` (never left), `rejected: true` (the data was refused: the
 * batch is split to find the records at fault).
 */
export type BatchSendFn<T, Rec> = (
  shard: ShardState<T>,
  records: Rec[],
  ctx: BatchContext,
) => Promise<BatchSendResult>;

/**
 * How records retried one by one (after a partial failure) are retried: the shape and defaults of
 * the balancer's `retry` option, so the balancer's own object can be passed here too.
 */
export interface RecordRetryOptions {
  /** Sends per record, the first included, whole-batch retries counted (default 3). */
  attempts?: number;
  /** Full-jitter backoff before a record joins a later batch (default `{ baseMs: 50, maxMs: 2_000 }`). */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Budget of record re-sends against records sent, or `false` (default `{ ratio: 0.2, minPerSecond: 10, ttlMs: 10_000 }`). */
  budget?: RetryBudgetOptions | false;
}

/**
 * Batching: records accumulate into batches, each sent as one run. Defaults (`BATCH_DEFAULTS`):
 * 500 records, 1 MiB, 50 ms of linger, at most 100 000 records and 256 MiB held.
 */
export interface BatchOptions<Rec> {
  /** Records per batch at most (default 500). */
  maxRecords?: number;
  /**
   * Bytes per batch at most, summed over `size(record)` (default 1 MiB): a hard bound — only a
   * single record larger than it travels alone, in a batch of its own.
   */
  maxBytes?: number;
  /** Longest a batch waits for more records after its first one, ms, on the balancer's clock (default 50). */
  lingerMs?: number;
  /**
   * A record's size in bytes, separator included (default: its encoded length plus one; for the
   * core `ingest`, a string's or bytes' length, else its JSON's, plus one).
   */
  size?: (record: Rec) => number;
  /**
   * Records taken and not yet settled — in batches, waiting, in flight, backing off — at most
   * (default the larger of 100 000 and 2 × `maxRecords`). The source is not read past it.
   */
  maxHeldRecords?: number;
  /** The same bound in bytes, over `size(record)` (default the larger of 256 MiB and 2 × `maxBytes`). */
  maxHeldBytes?: number;
  /**
   * Retries of batches and of records refused by a partial failure (see
   * {@link RecordRetryOptions}), or `false` (default: the balancer's `retry`).
   */
  retry?: RecordRetryOptions | false;
  /**
   * Keep each record until its batch settles, to report it as given (default true). `false`, where
   * shardwise encodes the body (`http.ingest`, `s3.ingest` with `'ndjson'` or `'json'`), keeps
   * only the bytes it was sent as: a failed record is then reported decoded from them — the same
   * text for a string, a `Buffer` of the same bytes, `JSON.parse` of its JSON for anything else.
   * Less memory held and less garbage-collection work at high rates.
   */
  keepRecords?: boolean;
}

/** What every record ingestion takes. */
export interface CommonRecordOptions<Rec> {
  /** Routing key of a record (for hashing pickers); batches keep to one home shard per key. */
  key?: (record: Rec) => Key | undefined;
  /** Size of a record in bytes (byte-aware load, `bytes` in the summary; with `batch`, `size`'s default). */
  bytes?: (record: Rec) => number;
  /** Records may be sent twice safely, so failed attempts are retried elsewhere (default true). */
  idempotent?: boolean;
  /**
   * Called once for every record that is not written, as it fails (after its retries) — and for
   * every uncertain one (sent, no answer; `error.uncertain === true`, an `UncertainWriteError`)
   * unless `onUncertain` is given.
   */
  onFailed?: (record: Rec, error: unknown) => void;
  /**
   * Called once for every record whose outcome is unknown: it was sent and no answer came (a
   * timeout, a connection reset after the body went out), so the shard may hold it. Without it,
   * `onFailed` hears of these too.
   */
  onUncertain?: (record: Rec, error: unknown) => void;
  /**
   * How long a record may wait in all, ms, from when it is taken — for a shard that pushes back,
   * for an ejected or unreachable home, for a slot (default: the balancer's `deliveryTimeoutMs`,
   * 120 000). Past it the record fails with a `ShardUnavailableError` naming its shard and why.
   */
  deliveryTimeoutMs?: number;
  /**
   * `'key'`: the records of one key are written in source order, retries included — one batch per
   * home at a time, a retried or split batch before any later batch of its home. Needs a keyed
   * picker and `key`. Default `'none'`: batches of a home overlap, up to its cap.
   */
  ordering?: 'key' | 'none';
  /**
   * How many failed records `summary.failures` keeps, the first ones (default 100 000; `Infinity`
   * keeps all). Each holds its record and error, so an ingestion of billions whose shards refuse
   * everything would otherwise run out of memory; `failed` still counts every one, and
   * `onFailed` hears of every one.
   */
  keepFailures?: number;
}

/** One record per run: `send(shard, record, ctx)`. */
export interface SingleRecordOptions<T, Rec> extends CommonRecordOptions<Rec> {
  batch?: undefined;
  /** Delivers one record. */
  send: SendFn<T, Rec>;
}

/** Batches: `send(shard, records, ctx)` delivers many records in one run. */
export interface BatchRecordOptions<T, Rec> extends CommonRecordOptions<Rec> {
  batch: BatchOptions<Rec>;
  /** Delivers one batch; may report the records the shard refused. */
  send: BatchSendFn<T, Rec>;
}

/** Options of `createWriteStream`. */
export type RecordOptions<T, Rec> = SingleRecordOptions<T, Rec> | BatchRecordOptions<T, Rec>;

/** What `ingest` adds to the record options. */
export interface IngestExtras<Rec = unknown> {
  /**
   * Called with the running figures every `progressMs` while the ingestion runs — stalls
   * included: it is a heartbeat, not a settlement report — and once at the end.
   */
  onProgress?: (progress: IngestProgress) => void;
  /** Time between two `onProgress` calls, ms (default 1 000). */
  progressMs?: number;
  /** The former name of `progressMs` (still read). */
  progressIntervalMs?: number;
  /**
   * Stops reading the source: the record taken when the abort is seen is reported failed with
   * the abort reason; records already admitted still settle; then `ingest` rejects with an
   * `IngestError` (`kind: 'aborted'`, `cause`: the reason).
   */
  signal?: AbortSignal;
  /**
   * Where records not written go, one NDJSON line each (`{ record, error, outcome, at }`): a file
   * (`{ path }`, appended, lines kept with `fsync` in batches within `windowMs`, default 50) or a
   * sink of your own (`{ write(record, outcome) }`). A record counts as settled only once its line
   * is kept; one that cannot be kept stops the ingestion (`IngestError` of kind `'deadLetter'`).
   * `readDeadLetters(path)` (`shardwise/sources`) reads them back for a replay.
   */
  deadLetter?: DeadLetterOption<Rec>;
  /** Uncertain records go to the dead letters too (default false: only failed ones). */
  deadLetterUncertain?: boolean;
  /**
   * Saves the watermark — records settled in source order, and the source position after them
   * (a source with positions: `readJsonl`) — atomically to `path` every `everyMs` (default 1 000)
   * and at the end; `from: await loadCheckpoint(path)` resumes a load from it.
   */
  checkpoint?: { path: string; everyMs?: number };
  /**
   * The checkpoint a resumed load starts from (`loadCheckpoint(path)`): counts and the watermark
   * go on from it, and a source with positions must start where it says (`readJsonl(files, {
   * from })`).
   */
  from?: Checkpoint;
  /**
   * Called with the watermark — the records settled in source order (the load's earlier ones
   * included) and the source position after them, if the source tells it — every
   * `checkpoint.everyMs` (default 1 000) when it moved, and at the end. For a source without
   * positions, the index is where to resume.
   */
  onCheckpoint?: (index: number, position: SourcePosition | undefined) => void;
}

/** Options of `ingest`, one record per run: `send(shard, record, ctx)`. */
export interface SingleIngestOptions<T, Rec>
  extends SingleRecordOptions<T, Rec>,
    IngestExtras<Rec> {}

/** Options of `ingest` with `batch`: `send(shard, records, ctx)`. */
export interface BatchIngestOptions<T, Rec> extends BatchRecordOptions<T, Rec>, IngestExtras<Rec> {}

/**
 * Options of `ingest`. The methods take the batch form in an overload of its own, so that
 * TypeScript types the parameters of an inline `send` in both forms.
 */
export type IngestOptions<T, Rec> = SingleIngestOptions<T, Rec> | BatchIngestOptions<T, Rec>;

/** What `ingest` reads records from. */
export type RecordSource<Rec> = Iterable<Rec> | AsyncIterable<Rec>;

/** Why a shard's records wait, in a progress report. */
export type ShardWait = 'down' | 'ejected' | 'pushBack' | 'slow' | 'cap';

/** One shard in a progress report: what the ingestion holds for it, and why it waits. */
export interface ShardProgress {
  /** Records of this home held (open, ready, in the balancer, backing off; keyed records only). */
  held: number;
  /** Closed batches of this home waiting to be handed to the balancer. */
  ready: number;
  /** Calls in flight on the shard now (all of its balancer's). */
  inFlight: number;
  /** Records written to it so far. */
  written: number;
  /**
   * Why its records wait, when they do: `down` (unreachable for a delivery timeout), `ejected`,
   * `pushBack`, `slow` (at its cap, and its latency ≥ 4 × the fleet's median), `cap` (at its cap).
   */
  waiting?: ShardWait;
}

/** Running figures of an `ingest`. */
export interface IngestProgress {
  written: number;
  failed: number;
  /** Records sent with no answer: they may or may not be stored. */
  uncertain: number;
  /** Records sent again after a send that may have been stored: the possible duplicates. */
  resent: number;
  bytes: number;
  retries: number;
  /** Batch sends so far (re-sends included; 0 without `batch`). */
  batches: number;
  /** Records taken from the source and not yet settled. */
  held: number;
  queued: number;
  inFlight: number;
  elapsedMs: number;
  /** Records written so far by shard id (a copy). */
  perShard: Record<string, number>;
  /** Each shard (by id): what the ingestion holds for it, and why it waits. */
  shards: Record<string, ShardProgress>;
  /** The body bytes the ingestion's sends carried so far (see `IngestSummary.transit`; a copy). */
  transit: TransitBytes;
}

/** A record that was not written, and why. */
export interface IngestFailure<Rec> {
  record: Rec;
  error: unknown;
}

/**
 * What an ingestion did. `written + failed + uncertain` is the number of records taken from the
 * source: each ends in exactly one of them (and one not written is listed in `failures`, up to
 * `keepFailures` of them).
 */
export interface IngestSummary<Rec> {
  /** Records the shards acknowledged. */
  written: number;
  /** Records known not stored: never sent, or refused with a definitive answer. */
  failed: number;
  /**
   * Records sent with no answer (a timeout, a reset after the body went out): each may or may not
   * be stored. Their error is an `UncertainWriteError` (`uncertain: true`).
   */
  uncertain: number;
  /**
   * Record sends after a send of the same record that may have been stored: the most duplicates
   * the shards can hold (0 when every send was answered). At-least-once delivery, made visible.
   */
  resent: number;
  /**
   * The records not written — failed and uncertain — with their errors, in the order they
   * settled: every one, up to `keepFailures` (default 100 000), then no more (`failed` and
   * `uncertain` count them all).
   */
  failures: IngestFailure<Rec>[];
  /** The same array as `failures` (the name the first API gave it). */
  errors: IngestFailure<Rec>[];
  /** Bytes of the records written (`bytes(record)`, or with `batch` each record's `size`). */
  bytes: number;
  /** Record sends beyond each record's first, over all records. */
  retries: number;
  durationMs: number;
  /** Records written per shard id. */
  perShard: Record<string, number>;
  /** Batch sends (re-sends included); 0 without `batch`. */
  batches: number;
  /**
   * The body bytes this ingestion's batch sends carried, re-sends included: `raw` before
   * compression, `wire` as sent, `received` in the answers — as each send reported them
   * (`http.ingest` and `s3.ingest` do; a `send` of your own through `ctx.reportSent` and
   * `ctx.reportReceived`). The balancer's `stats().bytes` counts the same for all its runs.
   */
  transit: TransitBytes;
}

/**
 * The write stream of `createWriteStream`: an object-mode `Writable` that also keeps the account
 * of every record it took. `'failed'` is emitted with `(record, error)` for each record not
 * written.
 */
export interface RecordWriteStream<Rec> extends Writable {
  /** The running account (final once `settled` resolves). */
  readonly summary: IngestSummary<Rec>;
  /**
   * Resolves with the final account once every record the stream took has settled — after
   * `'finish'`, or after the stream errored or was destroyed. Never rejects.
   */
  readonly settled: Promise<IngestSummary<Rec>>;
}
