/**
 * `createWriteStream(options)`: an object-mode `Writable` over a sink (one run per record, or
 * batches). Its backpressure is the sink's: a write is called back only when the balancer (or the
 * held bound) has room, so `pipeline()` pauses the source. Every record it takes is written or
 * reported: a `'failed'` event per record, and `summary` / `settled`. The first record that fails
 * makes the stream refuse new records; once every record it took has settled it errors with a
 * `WriteFailedError` for that first record (the contract), so `summary` is final by then.
 */
import { Writable } from 'node:stream';
import { BatchSink } from './batch-sink.js';
import { WriteFailedError } from './errors.js';
import { type FailureHooks, Ledger } from './ledger.js';
import { checkRecordOptions, type ResolvedRecordOptions } from './options.js';
import { RecordSink } from './record-sink.js';
import type { Sink } from './sink.js';
import type { IngestSummary, RecordOptions, RecordWriteStream, RunnerLike } from './types.js';

/** Builds the sink of a write stream around its ledger. */
export type SinkFactory<Rec> = (ledger: Ledger<Rec>) => Sink<Rec>;

/**
 * An object-mode `Writable` whose backpressure is the balancer's (see {@link RecordOptions}).
 *
 * @example
 * const stream = balancer.createWriteStream({ send: (shard, record, { signal }) => post(shard.target, record, signal) });
 * stream.on('failed', (record, error) => log.warn({ record, error }));
 * await pipeline(Readable.from(records), stream);
 */
export function createWriteStream<T, Rec>(
  runner: RunnerLike<T>,
  options: RecordOptions<T, Rec>,
): RecordWriteStream<Rec> {
  const o = checkRecordOptions<T, Rec>('createWriteStream', options);
  return new LedgerWriteStream<T, Rec>(runner, o, (ledger) =>
    callerSink('createWriteStream', runner, ledger, o),
  );
}

/**
 * The sink of a caller's `send` (`ingest` and `createWriteStream` of the core): one run per
 * record, or one per batch with `batch`.
 */
export function callerSink<T, Rec>(
  field: string,
  runner: RunnerLike<T>,
  ledger: Ledger<Rec>,
  o: ResolvedRecordOptions<T, Rec>,
): Sink<Rec> {
  if (o.batch === undefined) {
    return new RecordSink<T, Rec>(runner, ledger, {
      send: o.send!,
      key: o.key,
      bytes: o.bytes,
      idempotent: o.idempotent,
      deliveryTimeoutMs: o.deliveryTimeoutMs,
    });
  }
  return new BatchSink<T, Rec>(runner, ledger, {
    field,
    key: o.key,
    idempotent: o.idempotent,
    batch: o.batch,
    deliveryTimeoutMs: o.deliveryTimeoutMs,
    ordered: o.ordered,
    encoder: undefined,
    send: (shard, batch, ctx) => o.sendBatch!(shard, batch.records, ctx),
  });
}

type Callback = (error?: Error | null) => void;

export class LedgerWriteStream<T, Rec> extends Writable implements RecordWriteStream<Rec> {
  readonly summary: IngestSummary<Rec>;
  readonly settled: Promise<IngestSummary<Rec>>;
  readonly #ledger: Ledger<Rec>;
  readonly #sink: Sink<Rec>;
  /** The error the stream ends with, once a record failed (or a callback threw). */
  #failure: Error | undefined;
  /** Records failed because the stream refused them (they must not start a failure). */
  #refusing = false;
  #finalCallback: Callback | undefined;
  #resolveSettled!: (summary: IngestSummary<Rec>) => void;
  #ended = false;
  /**
   * The callback of a write held back after the first failure. Called in `_destroy`, once the
   * records Node still buffers are reported: Node then calls every buffered write's and `end()`'s
   * callback with the stream's error (it skips that while a write is in progress).
   */
  #heldWrite: Callback | undefined;

  constructor(
    runner: RunnerLike<T>,
    { onFailed, onUncertain, keepFailures }: FailureHooks<Rec>,
    sink: SinkFactory<Rec>,
    /** Resolves once records may be sent; a rejection errors the stream before it takes one. */
    start?: () => Promise<void>,
  ) {
    super({
      objectMode: true,
      highWaterMark: 1,
      // Node holds every write until `construct` calls back, and destroys the stream on its error.
      ...(start === undefined
        ? {}
        : {
            construct: (done: (error?: Error | null) => void) => {
              start().then(
                () => done(),
                (error: unknown) => done(error as Error),
              );
            },
          }),
    });
    this.#ledger = new Ledger<Rec>(runner, {
      keepFailures,
      onFailed: (record, error) => {
        // The option's callback first: a `'failed'` listener that throws must not silence it.
        try {
          onFailed?.(record, error);
        } finally {
          this.emit('failed', record, error);
        }
      },
      // An uncertain record is a `'failed'` event too (its error says `uncertain: true`).
      onUncertain: (record, error) => {
        try {
          (onUncertain ?? onFailed)?.(record, error);
        } finally {
          this.emit('failed', record, error);
        }
      },
    });
    this.summary = this.#ledger.summary;
    this.#sink = sink(this.#ledger);
    this.settled = new Promise((resolve) => {
      this.#resolveSettled = resolve;
    });
    const settle = this.#ledger.onSettle;
    this.#ledger.onSettle = () => {
      settle?.();
      this.#afterSettle();
    };
  }

  override _write(record: Rec, _encoding: BufferEncoding, callback: Callback): void {
    const ledger = this.#ledger;
    const seq = ledger.take();
    if (this.#failure !== undefined) {
      // Refused, and held back: the stream errors once what it took has settled (or called back
      // at once if a `failed` listener destroyed the stream meanwhile: `_destroy` ran already).
      this.#refuse(record);
      this.#calledBack(callback);
      return;
    }
    this.#sink.add(record, seq);
    const wait = this.#sink.wait();
    if (wait === undefined) {
      this.#calledBack(callback);
      return;
    }
    wait.then(() => this.#calledBack(callback));
  }

  /**
   * Takes the next record, unless a failure came: then the write waits for `_destroy`. Once
   * destroyed, it is called at once (`_destroy` ran: nothing else would call it, and Node waits
   * on it to call back the buffered writes).
   */
  #calledBack(callback: Callback): void {
    if (this.#failure === undefined || this.destroyed) callback();
    else this.#heldWrite = callback;
  }

  override _final(callback: Callback): void {
    this.#end();
    this.#finalCallback = callback;
    this.#ledger.idle().then(() => this.#finish());
  }

  override _destroy(error: Error | null, callback: Callback): void {
    // Records the stream was handed but had not taken yet (Node's buffer): reported, not dropped.
    const buffered = (this as { writableBuffer?: readonly { chunk: unknown }[] }).writableBuffer;
    if (Array.isArray(buffered)) {
      for (const { chunk } of buffered) {
        this.#ledger.take();
        this.#refuse(chunk as Rec, error ?? undefined);
      }
    }
    const held = this.#heldWrite;
    this.#heldWrite = undefined;
    held?.();
    this.#end();
    this.#ledger.idle().then(() => this.#resolveSettled(this.#ledger.close()));
    callback(error);
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#sink.end();
  }

  /** Fails a record the stream will not send. */
  #refuse(record: Rec, cause?: unknown): void {
    const first = this.#failure;
    const reason =
      first !== undefined
        ? `not sent: the write stream failed on an earlier record (${first.message})`
        : 'not sent: the write stream was destroyed before it took this record';
    this.#refusing = true;
    try {
      this.#ledger.fail(record, new WriteFailedError(record, first ?? cause, reason));
    } finally {
      this.#refusing = false;
    }
  }

  /** After each settlement: a first failure starts the stream's end; the last one ends it. */
  #afterSettle(): void {
    const ledger = this.#ledger;
    // A destroyed stream ends by its destroy: the records it refused then are not a failure.
    if (this.#failure === undefined && !this.#refusing && !this.destroyed) {
      const callbackError = ledger.callbackError;
      const first = ledger.firstFailure;
      if (callbackError !== undefined) {
        this.#failure =
          callbackError.error instanceof Error
            ? callbackError.error
            : new Error(String(callbackError.error));
      } else if (first !== undefined) {
        // Not `summary.failures[0]`: with `keepFailures: 0` that list stays empty.
        this.#failure = new WriteFailedError(first.record, first.error);
      }
      if (this.#failure !== undefined) {
        // Send what is held now; take nothing more. The error comes once all of it settled.
        this.#end();
        ledger.idle().then(() => this.#finish());
      }
    }
  }

  /** Everything taken has settled: finish, or error with the first failure. */
  #finish(): void {
    if (this.#ledger.held > 0) {
      this.#ledger.idle().then(() => this.#finish());
      return;
    }
    const failure = this.#failure;
    const final = this.#finalCallback;
    if (final !== undefined) {
      this.#finalCallback = undefined;
      this.#resolveSettled(this.#ledger.close());
      final(failure ?? null);
      return;
    }
    if (failure !== undefined && !this.destroyed) this.destroy(failure);
  }
}
