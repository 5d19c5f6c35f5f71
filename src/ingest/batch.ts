/**
 * One batch: the records it holds (in parallel arrays: no object per record), their sizes, their
 * keys when they are keyed, the history of records sent before in another batch, and — when the
 * body is built here — the body itself, written record by record as they arrive.
 */
import type { AttemptRecord } from '../base/errors.js';
import type { Key } from '../base/types.js';
import { ByteBuffer } from './bytes.js';
import type { RecordEncoder } from './encoders.js';

/**
 * What a batch that does not keep its records (`keepRecords: false`) holds in their place: how
 * to decode each from the bytes it was sent as.
 */
const AS_TEXT = Symbol('a string record, kept as its bytes');
const AS_BYTES = Symbol('a Uint8Array record, kept as its bytes');
const AS_JSON = Symbol('a record kept as its JSON bytes');

/**
 * A record, or in a batch that does not keep records, how to decode it from its bytes. A string
 * with a lone surrogate is kept as it is: its UTF-8 bytes hold U+FFFD in its place, so they would
 * not give back the same text.
 */
function stand(record: unknown): unknown {
  if (record === AS_TEXT || record === AS_BYTES || record === AS_JSON) return record;
  if (typeof record === 'string') {
    return (record as string & { isWellFormed(): boolean }).isWellFormed() ? AS_TEXT : record;
  }
  return record instanceof Uint8Array ? AS_BYTES : AS_JSON;
}

/** A record back from the bytes it was sent as: the same text, a copy of the bytes, or JSON parsed. */
function decode(stand: unknown, bytes: Uint8Array): unknown {
  if (typeof stand === 'string') return stand; // kept whole (see `stand`)
  if (stand === AS_BYTES) return Buffer.from(bytes);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  return stand === AS_TEXT ? text : JSON.parse(text);
}

/** What a record carries from earlier sends into a later batch. */
export interface Carried {
  /** Sends of the record so far that count against the retry rule (whole-batch retries included). */
  attempts: number;
  /** Each failed send: the shard, the error, the time since its batch opened. */
  history: AttemptRecord[];
  /** Some earlier send of it may have been stored (it was sent and no answer came). */
  uncertain?: boolean;
}

export class Batch<Rec> {
  records: Rec[] = [];
  sizes: number[] = [];
  /** Keys, for keyed batches (to re-check homes after a membership change). */
  keys: (Key | undefined)[] | undefined;
  /**
   * Each record's index in the source (0 for the ingestion's first), while the ingestion keeps a
   * watermark (checkpoints): what settles, settles by index.
   */
  seqs: number[] | undefined;
  /** Per record, what it carries from earlier sends (undefined for a first send). */
  carried: (Carried | undefined)[] | undefined;
  /** Sum of `sizes`. */
  bytes = 0;
  /** The body being written (when it is built here), framing included but the closing byte. */
  out: ByteBuffer | undefined;
  /** Where each record's own bytes start and end in `out` (separators excluded). */
  starts: number[] | undefined;
  ends: number[] | undefined;
  /** Cancels the linger timer, while one is armed. */
  cancelLinger: (() => void) | undefined;
  /** The membership this batch's homes were computed against. */
  members: readonly unknown[];
  /** Sends of this batch that threw (each counts as an attempt for every record in it). */
  log: AttemptRecord[] | undefined;
  /** A transport's own state for this batch across attempts (the S3 object key). */
  tag: unknown;
  /**
   * A transport's body made from the records as they are now (compressed once, before the run):
   * every attempt sends it. Cleared when records join or leave: the body must be made again.
   */
  prepared: unknown;
  /**
   * The id a deduplicating server may key on (`Idempotency-Key`): the same for every send of these
   * records, '' once records left the batch (the sender gives it a new one before the next send).
   */
  id = '';
  /** Sends of this batch counted against the retry rule (push-back and unreachable-home sends are free). */
  sends = 0;
  /** A send of this batch may have been stored: it went out and no answer came. */
  uncertain = false;
  /** The shard of that uncertain send. */
  uncertainShard = '';
  /** Balancer-clock time its oldest record's delivery deadline passes. */
  deadlineMs = Number.POSITIVE_INFINITY;
  /** Balancer-clock time before which it is not sent (the backoff of records sent again). */
  notBeforeMs = Number.NEGATIVE_INFINITY;
  #body: Buffer | undefined;

  constructor(
    /** False: keep each record's bytes only, and decode it from them when it must be reported. */
    readonly keep: boolean,
    /** The home shard id of a keyed batch ('' for keyed records with no home yet), else undefined. */
    readonly home: string | undefined,
    /** The key the batch runs with (its first record's): under strict affinity, the home's. */
    readonly key: Key | undefined,
    members: readonly unknown[],
    /** The format, when the body is built here. */
    readonly encoder: RecordEncoder<Rec> | undefined,
    /** Bytes to reserve for the body at first. */
    capacity: number,
    /** Balancer-clock time of the first record. */
    readonly openedAtMs: number,
    /** Records carry their source index (`seqs`). */
    tracked = false,
  ) {
    this.members = members;
    if (home !== undefined) this.keys = [];
    if (tracked) this.seqs = [];
    if (encoder !== undefined) {
      this.out = new ByteBuffer(capacity);
      this.starts = [];
      this.ends = [];
      if (encoder.open !== undefined) this.out.writeByte(encoder.open);
    }
  }

  get count(): number {
    return this.records.length;
  }

  /** Records carried from a batch whose send may have been stored (their re-send may duplicate). */
  get carriedUncertain(): number {
    const carried = this.carried;
    if (carried === undefined) return 0;
    let n = 0;
    for (const c of carried) if (c?.uncertain === true) n++;
    return n;
  }

  /** Records that were sent before, in another batch. */
  get carriedCount(): number {
    const carried = this.carried;
    if (carried === undefined) return 0;
    let n = 0;
    for (const c of carried) if (c !== undefined) n++;
    return n;
  }

  /**
   * Writes a record's encoding (or copies `encoded`, the bytes it had in another batch) with its
   * separator; returns its encoded length, separator included. On a throw nothing is written.
   */
  encode(record: Rec, encoded: Uint8Array | undefined): number {
    const encoder = this.encoder!;
    const out = this.out!;
    const mark = out.length;
    if (!encoder.terminated && this.records.length > 0) out.writeByte(encoder.separator);
    const start = out.length;
    try {
      if (encoded === undefined) encoder.write(record, out);
      else out.writeBytes(encoded);
    } catch (error) {
      out.length = mark;
      throw error;
    }
    const end = out.length;
    if (encoder.terminated) out.writeByte(encoder.separator);
    this.starts!.push(start);
    this.ends!.push(end);
    return end - start + 1;
  }

  /** Takes back the encoding written last (a record that belongs in the next batch); returns a copy. */
  unwrite(): Uint8Array {
    const out = this.out!;
    const start = this.starts!.pop()!;
    const end = this.ends!.pop()!;
    const bytes = Uint8Array.prototype.slice.call(out.buf, start, end);
    const separated = !this.encoder!.terminated && this.records.length > 0;
    out.length = separated ? start - 1 : start;
    return bytes;
  }

  /**
   * Adds a record (already encoded, when the body is built here) whose delivery deadline passes at
   * `deadlineMs`; `seq`: its index in the source (kept when the batch tracks them).
   */
  push(
    record: Rec,
    size: number,
    key: Key | undefined,
    carried: Carried | undefined,
    deadlineMs: number,
    seq: number,
  ): void {
    if (deadlineMs < this.deadlineMs) this.deadlineMs = deadlineMs;
    this.records.push(this.keep ? record : (stand(record) as Rec));
    this.sizes.push(size);
    this.bytes += size;
    this.keys?.push(key);
    this.seqs?.push(seq);
    if (carried !== undefined) {
      this.carried ??= new Array<Carried | undefined>(this.records.length - 1).fill(undefined);
      this.carried.push(carried);
    } else this.carried?.push(undefined);
    this.#body = undefined;
    this.prepared = undefined;
  }

  /**
   * Record `i` as the caller gave it — or, in a batch that does not keep records, as decoded from
   * the bytes it was sent as.
   */
  recordAt(i: number): Rec {
    const record = this.records[i]!;
    return this.keep ? record : (decode(record, this.encodedAt(i)!) as Rec);
  }

  /** Every record, as {@link recordAt} gives it. */
  decodedRecords(): Rec[] {
    if (this.keep) return this.records;
    return this.records.map((_, i) => this.recordAt(i));
  }

  /** The bytes record `i` was encoded as (a view: copy it before the batch is dropped). */
  encodedAt(i: number): Uint8Array | undefined {
    return this.out?.view(this.starts![i]!, this.ends![i]!);
  }

  /** Keeps only the records `keep` says yes to (in order); returns how many were removed. */
  retain(keep: (i: number) => boolean): number {
    const records: Rec[] = [];
    const sizes: number[] = [];
    const keys: (Key | undefined)[] | undefined = this.keys === undefined ? undefined : [];
    const seqs: number[] | undefined = this.seqs === undefined ? undefined : [];
    const carried: (Carried | undefined)[] | undefined =
      this.carried === undefined ? undefined : [];
    const kept: number[] = [];
    let bytes = 0;
    for (let i = 0; i < this.records.length; i++) {
      if (!keep(i)) continue;
      kept.push(i);
      records.push(this.records[i]!);
      sizes.push(this.sizes[i]!);
      bytes += this.sizes[i]!;
      keys?.push(this.keys![i]);
      seqs?.push(this.seqs![i]!);
      carried?.push(this.carried![i]);
    }
    const removed = this.records.length - records.length;
    if (removed > 0 && this.out !== undefined) this.#rewrite(kept);
    // Other records, another batch to a deduplicating server: a new id before the next send.
    if (removed > 0) this.id = '';
    this.records = records;
    this.sizes = sizes;
    this.keys = keys;
    this.seqs = seqs;
    this.carried = carried;
    this.bytes = bytes;
    this.#body = undefined;
    this.prepared = undefined;
    return removed;
  }

  /**
   * Two batches of this one's records, its first half and its second (a refused batch split to
   * find the records at fault, or one too large for the shard): see {@link take}.
   */
  split(): [Batch<Rec>, Batch<Rec>] {
    const mid = Math.ceil(this.count / 2);
    const first: number[] = [];
    const second: number[] = [];
    for (let i = 0; i < this.count; i++) (i < mid ? first : second).push(i);
    return [this.take(first), this.take(second)];
  }

  /**
   * A new batch of the records at `indexes` (in that order): the same home, key and delivery
   * deadline, each record with its size, key, encoded bytes and what it carries from earlier
   * sends (`carried[j]` instead, when given). The sends of this batch are not carried over.
   */
  take(indexes: readonly number[], carried?: readonly (Carried | undefined)[]): Batch<Rec> {
    const out = this.out;
    let capacity = 0;
    if (out !== undefined)
      for (const i of indexes) capacity += this.ends![i]! - this.starts![i]! + 1;
    const part = new Batch<Rec>(
      this.keep,
      this.home,
      this.key,
      this.members,
      this.encoder,
      capacity + 64,
      this.openedAtMs,
      this.seqs !== undefined,
    );
    indexes.forEach((i, j) => {
      if (out !== undefined) part.encode(this.records[i]!, this.encodedAt(i));
      part.pushKept(
        this.records[i]!,
        this.sizes[i]!,
        this.keys?.[i],
        carried === undefined ? this.carried?.[i] : carried[j],
        this.seqs?.[i] ?? -1,
      );
    });
    part.deadlineMs = this.deadlineMs;
    return part;
  }

  /** {@link push} for a record as this batch keeps it already (its stand-in, when it keeps bytes). */
  private pushKept(
    record: Rec,
    size: number,
    key: Key | undefined,
    carried: Carried | undefined,
    seq: number,
  ): void {
    this.records.push(record);
    this.sizes.push(size);
    this.bytes += size;
    this.keys?.push(key);
    this.seqs?.push(seq);
    if (carried !== undefined) {
      this.carried ??= new Array<Carried | undefined>(this.records.length - 1).fill(undefined);
      this.carried.push(carried);
    } else this.carried?.push(undefined);
    this.#body = undefined;
    this.prepared = undefined;
  }

  /**
   * The body in the batch's format: the buffer it was written into (with JSON's closing bracket
   * after it), kept for retries until the records change.
   */
  body(): Buffer {
    if (this.#body !== undefined) return this.#body;
    const out = this.out!;
    const close = this.encoder!.close;
    if (close === undefined) this.#body = out.view();
    else {
      // The bracket goes after the last byte, outside `length`: the batch is closed by now.
      out.reserve(1)[out.length] = close;
      this.#body = out.buf.subarray(0, out.length + 1);
    }
    return this.#body;
  }

  /** Writes a new body of the records at `kept` (their old encodings copied). */
  #rewrite(kept: readonly number[]): void {
    const old = this.out!;
    const encoder = this.encoder!;
    const out = new ByteBuffer(old.length);
    const starts: number[] = [];
    const ends: number[] = [];
    if (encoder.open !== undefined) out.writeByte(encoder.open);
    kept.forEach((i, n) => {
      if (!encoder.terminated && n > 0) out.writeByte(encoder.separator);
      starts.push(out.length);
      out.writeBytes(old.view(this.starts![i]!, this.ends![i]!));
      ends.push(out.length);
      if (encoder.terminated) out.writeByte(encoder.separator);
    });
    this.out = out;
    this.starts = starts;
    this.ends = ends;
  }
}
