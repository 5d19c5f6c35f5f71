import { Writable } from 'node:stream';
import { ConfigError, messageOf } from './errors.js';
import type { RunContext } from './run.js';
import type { Clock, Key, ShardState } from './types.js';
import { bool, checkKnownKeys, checkObject, duration, fn } from './validate.js';

/** What streams and `ingest` need of a balancer (kept narrow so this file imports no Balancer). */
export interface RunnerLike<T> {
  readonly clock: Clock;
  run<R>(
    fn: (shard: ShardState<T>, ctx: RunContext) => Promise<R>,
    options?: { key?: Key; idempotent?: boolean; bytes?: number; signal?: AbortSignal },
  ): Promise<R>;
  ready(): Promise<void>;
  stats(): { queued: number; inFlight: number };
}

/** Sends one record to the shard the balancer picked. */
export type SendFn<T, Rec> = (
  shard: ShardState<T>,
  record: Rec,
  ctx: RunContext,
) => Promise<unknown>;

/** Options of `createWriteStream` and `ingest`. */
export interface RecordOptions<T, Rec> {
  /** Delivers one record. */
  send: SendFn<T, Rec>;
  /** Routing key of a record (for hashing pickers). */
  key?: (record: Rec) => Key | undefined;
  /** Size of a record in bytes (byte-aware load, `bytes` in the summary). */
  bytes?: (record: Rec) => number;
  /** Records may be sent twice safely, so failed attempts are retried elsewhere (default true). */
  idempotent?: boolean;
}

/** Options of `ingest`. */
export interface IngestOptions<T, Rec> extends RecordOptions<T, Rec> {
  /** Called with the running figures at most every `progressIntervalMs`, and once at the end. */
  onProgress?: (progress: IngestProgress) => void;
  /** Least time between two `onProgress` calls, ms (default 1 000). */
  progressIntervalMs?: number;
  /** Stops reading the source; records already admitted still settle. */
  signal?: AbortSignal;
}

/** Running figures of an `ingest`. */
export interface IngestProgress {
  written: number;
  failed: number;
  bytes: number;
  retries: number;
  queued: number;
  inFlight: number;
  elapsedMs: number;
}

/** What `ingest` resolves with. It never rejects for a failed record: failures are listed. */
export interface IngestSummary<Rec> {
  written: number;
  failed: number;
  errors: { record: Rec; error: unknown }[];
  /** Bytes of the records written (needs the `bytes` option). */
  bytes: number;
  /** Attempts beyond the first, over all records. */
  retries: number;
  durationMs: number;
  /** Records written per shard id. */
  perShard: Record<string, number>;
}

/** A record failed after its retries; the write stream errors with it. */
export class WriteFailedError extends Error {
  declare readonly code: 'SHARDWISE_WRITE_FAILED';
  readonly record: unknown;
  constructor(record: unknown, cause: unknown) {
    super(`a record failed to be written: ${messageOf(cause)}`, { cause });
    Object.defineProperty(this, Symbol.for('shardwise.error'), { value: 'SHARDWISE_WRITE_FAILED' });
    Object.defineProperty(this, 'code', { value: 'SHARDWISE_WRITE_FAILED', enumerable: true });
    this.name = 'WriteFailedError';
    this.record = record;
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[Symbol.for('shardwise.error')] === 'SHARDWISE_WRITE_FAILED'
    );
  }
}

function checkRecordOptions(field: string, options: unknown, extra: readonly string[] = []): void {
  checkObject(field, options);
  checkKnownKeys(field, options, ['send', 'key', 'bytes', 'idempotent', ...extra]);
  const o = options as RecordOptions<unknown, unknown>;
  fn(`${field}.send`, o.send);
  if (o.key !== undefined) fn(`${field}.key`, o.key);
  if (o.bytes !== undefined) fn(`${field}.bytes`, o.bytes);
  if (o.idempotent !== undefined) bool(`${field}.idempotent`, o.idempotent);
}

function runOptionsOf<T, Rec>(options: RecordOptions<T, Rec>, record: Rec) {
  const key = options.key?.(record);
  const bytes = options.bytes?.(record) ?? 0;
  return { key, bytes, idempotent: options.idempotent ?? true };
}

/**
 * An object-mode `Writable` whose backpressure is the balancer's: `write()` returns false while
 * the balancer's queue is at `maxQueued`, and `finish` comes only after every record settled.
 * The first record that fails after retries errors the stream with a `WriteFailedError`.
 */
export function createWriteStream<T, Rec>(
  runner: RunnerLike<T>,
  options: RecordOptions<T, Rec>,
): Writable {
  checkRecordOptions('createWriteStream', options);
  let pending = 0;
  let onIdle: (() => void) | undefined;
  const settled = () => {
    if (--pending === 0 && onIdle !== undefined) {
      const idle = onIdle;
      onIdle = undefined;
      idle();
    }
  };
  const stream: Writable = new Writable({
    objectMode: true,
    highWaterMark: 1,
    write(record: Rec, _encoding, callback) {
      const { key, bytes, idempotent } = runOptionsOf(options, record);
      pending++;
      runner
        .run((shard, ctx) => options.send(shard, record, ctx), { key, bytes, idempotent })
        .then(settled, (error) => {
          // Destroy before settling: were this the last pending record, settling first would
          // let `final` finish the stream and the error would be lost.
          stream.destroy(new WriteFailedError(record, error));
          settled();
        });
      runner.ready().then(() => callback(), callback);
    },
    final(callback) {
      if (pending === 0) callback();
      else onIdle = () => callback();
    },
  });
  return stream;
}

/**
 * Sends every record of `source` (an iterable or async iterable) through the balancer, waiting on
 * `ready()` so at most `maxQueued` records wait in memory. Resolves with a summary once every
 * record has settled; a record that fails is listed in `errors`, never thrown.
 */
export async function ingest<T, Rec>(
  runner: RunnerLike<T>,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  options: IngestOptions<T, Rec>,
): Promise<IngestSummary<Rec>> {
  checkRecordOptions('ingest', options, ['onProgress', 'progressIntervalMs', 'signal']);
  if (
    source === null ||
    typeof source !== 'object' ||
    (!(Symbol.iterator in source) && !(Symbol.asyncIterator in source))
  ) {
    throw new ConfigError('source', 'must be an iterable or an async iterable', source);
  }
  if (options.onProgress !== undefined) fn('ingest.onProgress', options.onProgress);
  const interval =
    options.progressIntervalMs === undefined
      ? 1_000
      : duration('ingest.progressIntervalMs', options.progressIntervalMs);
  const clock = runner.clock;
  const started = clock.now();
  const summary: IngestSummary<Rec> = {
    written: 0,
    failed: 0,
    errors: [],
    bytes: 0,
    retries: 0,
    durationMs: 0,
    perShard: {},
  };
  let lastProgress = started;
  const progress = (force: boolean) => {
    if (options.onProgress === undefined) return;
    const now = clock.now();
    if (!force && now - lastProgress < interval) return;
    lastProgress = now;
    const { queued, inFlight } = runner.stats();
    options.onProgress({
      written: summary.written,
      failed: summary.failed,
      bytes: summary.bytes,
      retries: summary.retries,
      queued,
      inFlight,
      elapsedMs: now - started,
    });
  };
  let pending = 0;
  let onIdle: (() => void) | undefined;
  const settled = () => {
    progress(false);
    if (--pending === 0 && onIdle !== undefined) onIdle();
  };
  for await (const item of source as AsyncIterable<Rec>) {
    if (options.signal?.aborted) break;
    const record = item as Rec;
    await runner.ready();
    const { key, bytes, idempotent } = runOptionsOf(options, record);
    pending++;
    runner
      .run(
        (shard, ctx) => {
          if (ctx.attempt > 1) summary.retries++;
          return options.send(shard, record, ctx).then(() => shard.id);
        },
        { key, bytes, idempotent },
      )
      .then(
        (shardId) => {
          summary.written++;
          summary.bytes += bytes;
          summary.perShard[shardId] = (summary.perShard[shardId] ?? 0) + 1;
          settled();
        },
        (error) => {
          summary.failed++;
          summary.errors.push({ record, error });
          settled();
        },
      );
  }
  if (pending > 0) {
    await new Promise<void>((resolve) => {
      onIdle = resolve;
    });
  }
  summary.durationMs = clock.now() - started;
  progress(true);
  return summary;
}
