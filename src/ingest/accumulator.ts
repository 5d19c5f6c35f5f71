/**
 * The accumulator: where records wait to become batches, per home (Kafka's `RecordAccumulator`).
 * Keyed records gather in their home shard's open batch (a batch never mixes homes, so strict
 * affinity holds for every record in it); unkeyed records fill one batch at a time, and the
 * picker chooses where it goes when it is sent — Kafka's sticky partitioner (KIP-480), under
 * which a slow or pushed-back shard gets fewer batches, not smaller ones (KIP-794). A batch
 * closes when full (records or bytes), when its linger ends (the sender's timer asks, through
 * {@link closeLingered}), or on a flush, and joins its home's `ready` line. It holds no timer and
 * calls nobody: the sink places records, the sender takes batches.
 */
import type { Clock, Key } from '../base/types.js';
import { Batch, type Carried } from './batch.js';
import type { RecordEncoder } from './encoders.js';
import { Home } from './home.js';

export interface AccumulatorLimits {
  maxRecords: number;
  /** Bytes a batch's records may sum to: `maxBytes` less the framing the body adds. */
  maxRecordBytes: number;
  lingerMs: number;
  /** The body format, when the body is built here (each record is encoded as it is placed). */
  encoder: RecordEncoder<any> | undefined;
  /** Most bytes a batch body starts with. */
  maxCapacity: number;
  /** Batches keep the records themselves (else their bytes only: `keepRecords: false`). */
  keepRecords: boolean;
  /** How long a record may wait in all: a batch's deadline is its opening plus this, at most. */
  deliveryTimeoutMs: number;
  /** Batches keep each record's source index (the ingestion keeps a watermark). */
  trackSeqs?: boolean;
}

/** What a placement did: nothing more, opened a batch (arm its linger), closed one (send it). */
export const PLACED = 0;
export const OPENED = 1;
export const CLOSED = 2;
export type Placement = typeof PLACED | typeof OPENED | typeof CLOSED;

/** The body a home's first batch starts with, bytes: it grows as records come. */
const FIRST_CAPACITY = 16 * 1024;

export class Accumulator<Rec> {
  readonly #limits: AccumulatorLimits;
  /** Keyed homes by shard id ('' for keyed records with no home yet). */
  readonly homes = new Map<string, Home<Rec>>();
  /** The home of unkeyed records. */
  readonly unkeyed = new Home<Rec>(undefined);
  /** The source ended: what is placed from now on closes at once. */
  #ending = false;
  /** What each home's last batch body came to: its next batch starts with about that much room. */
  readonly #expected = new WeakMap<Home<Rec>, number>();
  /** Size of the last placement, bytes (its encoded length when it was measured by encoding). */
  lastSize = 0;

  constructor(
    limits: AccumulatorLimits,
    /** Read when a batch opens (its linger, its deadline): once a batch, not once a record. */
    private readonly clock: Clock,
    /** The membership now: a batch remembers the one it opened under, to re-check its homes. */
    private readonly members: () => readonly unknown[] = () => [],
  ) {
    this.#limits = limits;
  }

  /** The home `id` names (undefined: unkeyed), made on first use. */
  home(id: string | undefined): Home<Rec> {
    if (id === undefined) return this.unkeyed;
    let home = this.homes.get(id);
    if (home === undefined) {
      home = new Home<Rec>(id);
      this.homes.set(id, home);
    }
    return home;
  }

  /** Every home, the unkeyed one last. */
  *all(): Iterable<Home<Rec>> {
    yield* this.homes.values();
    yield this.unkeyed;
  }

  /**
   * Adds one record to `home`'s open batch (opened now if there is none) and says what that did.
   * `deadlineMs`: the record's own delivery deadline when it is earlier than a batch opened now
   * would give it (a record carried from an earlier batch, or one that waited for room);
   * `Infinity` for a record just taken. With an encoder the record is encoded into the body now (or `encoded`, its bytes from an
   * earlier batch, copied), and `size` < 0 means "its encoded length" ({@link lastSize} tells
   * it). A record that would take the batch past its byte bound closes it first and opens the
   * next; a record larger than the bound travels alone. A record that cannot be encoded throws,
   * and nothing of it stays.
   */
  place(
    home: Home<Rec>,
    record: Rec,
    key: Key | undefined,
    size: number,
    carried: Carried | undefined,
    encoded: Uint8Array | undefined,
    deadlineMs: number,
    seq = -1,
  ): Placement {
    const limits = this.#limits;
    let placement: Placement = PLACED;
    let batch = home.open;
    if (batch === undefined) {
      batch = this.#create(home, key);
      placement = OPENED;
    }
    if (limits.encoder !== undefined) {
      const length = batch.encode(record, encoded);
      if (size < 0) size = length;
      if (batch.count > 0 && batch.bytes + size > limits.maxRecordBytes) {
        const bytes = batch.unwrite();
        this.#close(home);
        batch = this.#create(home, key);
        batch.encode(record, bytes);
        placement = CLOSED;
      }
    } else if (batch.count > 0 && batch.bytes + size > limits.maxRecordBytes) {
      this.#close(home);
      batch = this.#create(home, key);
      placement = CLOSED;
    }
    batch.push(record, size, key, carried, deadlineMs, seq);
    home.held++;
    home.heldBytes += size;
    this.lastSize = size;
    if (batch.count >= limits.maxRecords || batch.bytes >= limits.maxRecordBytes || this.#ending) {
      this.#close(home);
      return CLOSED;
    }
    return placement;
  }

  /** Puts `batch` at the front of its home's ready line (a retry, a split): it goes first. */
  requeue(home: Home<Rec>, batch: Batch<Rec>): void {
    home.ready.unshift(batch);
  }

  /** Closes `home`'s open batch, if it has one. */
  flush(home: Home<Rec>): boolean {
    if (home.open === undefined) return false;
    this.#close(home);
    return true;
  }

  /** Closes every open batch whose linger has ended by `nowMs`; the earliest linger left, else Infinity. */
  closeLingered(nowMs: number): number {
    let next = Number.POSITIVE_INFINITY;
    for (const home of this.all()) {
      if (home.open === undefined) continue;
      if (home.lingerEndsMs <= nowMs) this.#close(home);
      else if (home.lingerEndsMs < next) next = home.lingerEndsMs;
    }
    return next;
  }

  /** The source ended: every open batch closes now, and so does whatever is placed from now on. */
  end(): void {
    this.#ending = true;
    for (const home of this.all()) if (home.open !== undefined) this.#close(home);
  }

  #create(home: Home<Rec>, key: Key | undefined): Batch<Rec> {
    const limits = this.#limits;
    const nowMs = this.clock.now();
    const batch = new Batch<Rec>(
      limits.keepRecords,
      home.id,
      home.id === undefined ? undefined : key,
      this.members(),
      limits.encoder,
      limits.encoder === undefined
        ? 0
        : Math.min(limits.maxCapacity, this.#expected.get(home) ?? FIRST_CAPACITY),
      nowMs,
      limits.trackSeqs === true,
    );
    batch.deadlineMs = nowMs + limits.deliveryTimeoutMs;
    home.open = batch;
    home.lingerEndsMs = nowMs + limits.lingerMs;
    return batch;
  }

  #close(home: Home<Rec>): void {
    const batch = home.open!;
    home.open = undefined;
    home.lingerEndsMs = Number.POSITIVE_INFINITY;
    if (batch.count === 0) return;
    // The next batch of this home starts with room for about what this one held — never more:
    // a home whose records trickle in reserves little, however full another home's batches are.
    if (batch.out !== undefined) {
      this.#expected.set(home, batch.out.length + (batch.out.length >> 3) + 64);
    }
    home.ready.push(batch);
  }
}
