/**
 * Batches: each record is keyed, measured (and encoded, when the body is built here), then placed
 * in the batch of its home; closed batches run through the balancer. Backpressure counts records
 * and bytes held — taken and not settled, wherever they are — so a fast source never outruns
 * memory, whatever `maxQueued × maxRecords` would allow.
 */
import { ConfigError } from '../errors.js';
import type { Key } from '../types.js';
import { BatchRunner, type BatchSender } from './batch-runner.js';
import { Batcher } from './batcher.js';
import { framingBytes, ndjsonSize, type RecordEncoder } from './encoders.js';
import { deferredVoid, type Ledger } from './ledger.js';
import type { ResolvedBatch } from './options.js';
import type { Sink } from './sink.js';
import type { RunnerLike } from './types.js';

export interface BatchSinkOptions<T, Rec> {
  /** The option path errors name (`ingest`, `http.ingest` …). */
  field: string;
  key: ((record: Rec) => unknown) | undefined;
  idempotent: boolean;
  batch: ResolvedBatch<Rec>;
  /** Builds the body here (transports): each record is encoded as it is taken. */
  encoder: RecordEncoder<Rec> | undefined;
  send: BatchSender<T, Rec>;
}

export class BatchSink<T, Rec> implements Sink<Rec> {
  readonly #runner: RunnerLike<T>;
  readonly #ledger: Ledger<Rec>;
  readonly #o: BatchSinkOptions<T, Rec>;
  readonly #batcher: Batcher<Rec>;
  readonly #runs: BatchRunner<T, Rec>;
  readonly #size: (record: Rec) => number;
  #room: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(runner: RunnerLike<T>, ledger: Ledger<Rec>, options: BatchSinkOptions<T, Rec>) {
    this.#runner = runner;
    this.#ledger = ledger;
    this.#o = options;
    const { batch, encoder } = options;
    this.#size = batch.size ?? (ndjsonSize() as (record: Rec) => number);
    this.#runs = new BatchRunner<T, Rec>({
      runner,
      ledger,
      send: options.send,
      idempotent: options.idempotent,
      retry: batch.retry,
      field: options.field,
      place: (record, key, size, carried, encoded) =>
        this.#batcher.place(record, key, this.#homeOf(key), size, carried, encoded),
    });
    this.#batcher = new Batcher<Rec>(
      { clock: runner.clock, members: () => runner.shards, ship: (b) => this.#runs.ship(b) },
      {
        maxRecords: batch.maxRecords,
        maxRecordBytes:
          batch.maxBytes -
          (encoder === undefined ? 0 : framingBytes(encoder as RecordEncoder<unknown>)),
        lingerMs: batch.lingerMs,
        encoder,
        maxCapacity: Math.min(batch.maxBytes + 64, 64 * 1024 * 1024),
        keepRecords: batch.keepRecords,
      },
    );
    ledger.onSettle = () => this.#settled();
  }

  add(record: Rec): void {
    const o = this.#o;
    let size: number;
    try {
      const key = o.key === undefined ? undefined : checkKey(o.field, o.key(record));
      // With an encoder the size is the encoded length unless `size` says otherwise (-1).
      if (o.encoder === undefined) size = checkSize(o.field, this.#size(record));
      else size = o.batch.size === undefined ? -1 : checkSize(o.field, o.batch.size(record));
      size = this.#batcher.place(record, key, this.#homeOf(key), size, undefined, undefined);
    } catch (error) {
      // A record whose key, size or encoding fails is reported failed; the ingestion goes on.
      this.#ledger.fail(record, error);
      return;
    }
    this.#ledger.holdBytes(size);
  }

  wait(): Promise<void> | undefined {
    if (this.#runs.waiting === 0 && !this.#full()) return undefined;
    return this.#untilRoom();
  }

  end(): void {
    this.#batcher.end();
  }

  /** Waits for closed batches to reach the balancer, then for the held records to fall below the bounds. */
  async #untilRoom(): Promise<void> {
    for (;;) {
      if (this.#runs.waiting > 0) {
        await this.#runs.pumped();
        continue;
      }
      if (!this.#full()) return;
      // The source waits for room: every open batch is sendable now, full or not — as Kafka's
      // RecordAccumulator treats batches as ready while a producer waits for buffer memory.
      this.#batcher.flushAll();
      if (this.#runs.waiting > 0) continue;
      this.#room ??= deferredVoid();
      this.#batcher.starved = true;
      try {
        await this.#room.promise;
      } finally {
        this.#batcher.starved = false;
      }
    }
  }

  #full(): boolean {
    const ledger = this.#ledger;
    const batch = this.#o.batch;
    return ledger.held >= batch.maxHeldRecords || ledger.heldBytes >= batch.maxHeldBytes;
  }

  #settled(): void {
    if (this.#room !== undefined && !this.#full()) {
      const room = this.#room;
      this.#room = undefined;
      room.resolve();
    }
  }

  /** The batch a key belongs to: its home's; keyed records with no home yet wait together. */
  #homeOf(key: Key | undefined): string | undefined {
    if (key === undefined) return undefined;
    const runner = this.#runner;
    return runner.homeOf(key) ?? (runner.picker.keyed === true ? '' : undefined);
  }
}

function checkKey(field: string, key: unknown): Key | undefined {
  if (key === undefined || typeof key === 'string' || key instanceof Uint8Array) return key;
  throw new ConfigError(`${field}.key`, 'must return a string, a Uint8Array or undefined', key);
}

function checkSize(field: string, size: unknown): number {
  if (typeof size === 'number' && Number.isFinite(size) && size >= 0) return size;
  throw new ConfigError(`${field}.batch.size`, 'must return a finite number ≥ 0', size);
}
