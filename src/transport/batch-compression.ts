/**
 * Batch bodies compressed once, before their runs (`http.ingest` and `s3.ingest` with
 * `compression`). The sender readies each batch before it hands it to the balancer, so no shard
 * slot is held while the threadpool compresses, and the next batch is encoded meanwhile; every
 * attempt of the batch then sends the same bytes. A batch whose records changed between attempts
 * (some reached their attempts, or moved to another home) is compressed again, in its attempt.
 */
import type { Batch } from '../ingest/batch.js';
import type { BatchReadying } from '../ingest/transport-plan.js';
import type { Compressed, Compressor } from './compression.js';

/**
 * Compresses each batch's body with one compressor; `raw(batch)` is the body before compression
 * (the batch's own bytes, or what the caller's `encode` returns).
 *
 * @example
 * const compression = new BatchCompression(createCompressor('zstd'), (batch) => batch.body());
 * // plan: batchPlan(runner, field, read, sender, compression); in the send:
 * const body = await compression.body(batch); // a Compressed: body, encoding, rawBytes, wireBytes
 */
export class BatchCompression<Rec> implements BatchReadying<Rec> {
  constructor(
    readonly compressor: Compressor,
    readonly raw: (batch: Batch<Rec>) => string | Uint8Array,
  ) {}

  /** The codec can run (zstd's peer is there): the ingestion waits for it before reading. */
  readonly start = (): Promise<void> => this.compressor.ready();

  /** Compresses `batch` unless its body is made already; undefined then. */
  readonly prepare = (batch: Batch<Rec>): Promise<void> | undefined => {
    if (batch.prepared !== undefined) return undefined;
    return this.#make(batch).then(noop);
  };

  /**
   * The body `batch` is sent with: the one made before its run, or — its records changed since —
   * made now. `minBytes` overrides the compressor's (0 compresses even a short body).
   */
  body(batch: Batch<Rec>, minBytes?: number): Promise<Compressed> {
    const made = batch.prepared as Compressed | undefined;
    if (made !== undefined && (minBytes === undefined || made.encoding !== undefined)) {
      return Promise.resolve(made);
    }
    return this.#make(batch, minBytes);
  }

  async #make(batch: Batch<Rec>, minBytes?: number): Promise<Compressed> {
    // Records leave a batch by replacing its list: an attempt cut off while this compression ran
    // may have been followed by one that changed them, and these bytes are then not its body.
    const records = batch.records;
    const compressed = await this.compressor.compress(this.raw(batch), minBytes);
    if (batch.records === records) batch.prepared = compressed;
    return compressed;
  }
}

function noop(): void {}
