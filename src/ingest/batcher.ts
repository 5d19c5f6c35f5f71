/**
 * The accumulator: where records wait to become batches. Keyed records gather per home shard (a
 * batch never mixes homes, so strict affinity holds for every record in it); unkeyed records fill
 * one batch at a time, and the picker chooses where that batch goes when it runs — Kafka's sticky
 * partitioner (KIP-480), under which a slow or pushed-back shard gets fewer batches, not smaller
 * ones (KIP-794). A batch closes when full (records or bytes), when its linger expires (timed from
 * its first record, on the balancer's clock), or when everything is flushed; closed batches are
 * shipped in the order they closed.
 */
import type { Clock, Key } from '../types.js';
import { Batch, type Carried } from './batch.js';
import type { RecordEncoder } from './encoders.js';

/** What the batcher needs around it. */
export interface BatcherHost {
  readonly clock: Clock;
  /** The membership now (a batch remembers it, to re-check its homes when it changes). */
  members(): readonly unknown[];
  /** A batch closed: send it. */
  ship(batch: Batch<any>): void;
}

export interface BatcherLimits {
  maxRecords: number;
  /** Bytes a batch's records may sum to: `maxBytes` less the framing the body adds. */
  maxRecordBytes: number;
  lingerMs: number;
  /** The body format, when the body is built here (each record is encoded as it is placed). */
  encoder: RecordEncoder<any> | undefined;
  /** Most bytes a batch body starts with (it grows as records come). */
  maxCapacity: number;
  /** Batches keep the records themselves (else their bytes only: `keepRecords: false`). */
  keepRecords: boolean;
}

export class Batcher<Rec> {
  readonly #host: BatcherHost;
  readonly #limits: BatcherLimits;
  /** The open batch of unkeyed records. */
  #open: Batch<Rec> | undefined;
  /** Open batches of keyed records, by home shard id. */
  readonly #homes = new Map<string, Batch<Rec>>();
  /** No more records from the source: what is placed now is flushed at once. */
  #ending = false;
  #flushQueued = false;
  /** What the last batch's body came to (a new body starts with room for about as much). */
  #expectedBytes = 16 * 1024;

  constructor(host: BatcherHost, limits: BatcherLimits) {
    this.#host = host;
    this.#limits = limits;
  }

  /** Batches open now. */
  get openCount(): number {
    return this.#homes.size + (this.#open === undefined ? 0 : 1);
  }

  /**
   * Adds one record to the open batch of `home` (undefined: unkeyed) and returns its size. With
   * an encoder the record is encoded into the batch's body now (or `encoded`, its bytes from an
   * earlier batch, copied), and `size` < 0 means "its encoded length". A record that would take
   * the batch past its byte bound closes it first and opens the next; a record larger than the
   * bound travels alone. A record that cannot be encoded throws, and nothing of it stays.
   */
  place(
    record: Rec,
    key: Key | undefined,
    home: string | undefined,
    size: number,
    carried: Carried | undefined,
    encoded: Uint8Array | undefined,
  ): number {
    const limits = this.#limits;
    let batch =
      (home === undefined ? this.#open : this.#homes.get(home)) ?? this.#create(home, key);
    if (limits.encoder !== undefined) {
      const length = batch.encode(record, encoded);
      if (size < 0) size = length;
      if (batch.count > 0 && batch.bytes + size > limits.maxRecordBytes) {
        const bytes = batch.unwrite();
        this.#close(batch);
        batch = this.#create(home, key);
        batch.encode(record, bytes);
      }
    } else if (batch.count > 0 && batch.bytes + size > limits.maxRecordBytes) {
      this.#close(batch);
      batch = this.#create(home, key);
    }
    batch.push(record, size, key, carried);
    if (batch.count >= limits.maxRecords || batch.bytes >= limits.maxRecordBytes) {
      this.#close(batch);
    } else if (this.#ending || this.starved) this.#queueFlush();
    return size;
  }

  /**
   * True while the source waits for room: what is placed meanwhile (retries, records moving home)
   * is sent at once, as at the end — the source waits on those very records, not on a linger.
   */
  starved = false;

  /** Closes every open batch (the end of the source, or the held bound reached). */
  flushAll(): void {
    this.#flushQueued = false;
    if (this.#open !== undefined) this.#close(this.#open);
    for (const batch of [...this.#homes.values()]) this.#close(batch);
  }

  /** The source ended: flush now, and flush whatever is placed from now on (retries). */
  end(): void {
    this.#ending = true;
    this.flushAll();
  }

  #create(home: string | undefined, key: Key | undefined): Batch<Rec> {
    const host = this.#host;
    const limits = this.#limits;
    const batch = new Batch<Rec>(
      limits.keepRecords,
      home,
      home === undefined ? undefined : key,
      host.members(),
      limits.encoder,
      Math.min(limits.maxCapacity, this.#expectedBytes),
      host.clock.now(),
    );
    if (home === undefined) this.#open = batch;
    else this.#homes.set(home, batch);
    if (!this.#ending) {
      batch.cancelLinger = host.clock.setTimer(() => {
        batch.cancelLinger = undefined;
        this.#close(batch);
      }, this.#limits.lingerMs);
    }
    return batch;
  }

  #close(batch: Batch<Rec>): void {
    batch.cancelLinger?.();
    batch.cancelLinger = undefined;
    if (batch.out !== undefined && batch.count > 0) {
      this.#expectedBytes = batch.out.length + (batch.out.length >> 3) + 64;
    }
    if (batch.home === undefined) {
      if (this.#open === batch) this.#open = undefined;
    } else if (this.#homes.get(batch.home) === batch) this.#homes.delete(batch.home);
    this.#host.ship(batch);
  }

  /** Records placed together (a group of retries) leave in as few batches as they fill. */
  #queueFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      if (this.#flushQueued) this.flushAll();
    });
  }
}
