/**
 * One batch: the records it holds (in parallel arrays: no object per record), their sizes, their
 * encodings when the body is built here, their keys when they are keyed, and the history of the
 * records that were sent before in another batch.
 */
import type { AttemptRecord } from '../errors.js';
import type { Key } from '../types.js';
import { type Chunk, chunkBytes, framingBytes, type RecordEncoder, writeBody } from './encoders.js';

/** What a record carries from earlier sends into a later batch. */
export interface Carried {
  /** Sends of the record so far (whole-batch retries included). */
  attempts: number;
  /** Each failed send: the shard, the error, the time since its batch opened. */
  history: AttemptRecord[];
}

export class Batch<Rec> {
  records: Rec[] = [];
  sizes: number[] = [];
  /** Encodings, when the body is built here. */
  chunks: Chunk[] | undefined;
  /** Keys, for keyed batches (to re-check homes after a membership change). */
  keys: (Key | undefined)[] | undefined;
  /** Per record, what it carries from earlier sends (undefined for a first send). */
  carried: (Carried | undefined)[] | undefined;
  /** Sum of `sizes`. */
  bytes = 0;
  /** Sum of the encoded lengths (with separators), for the body; -1 once records were removed. */
  bodyBytes = 0;
  /** True while every chunk is text (the body is then joined in one call). */
  allText = true;
  /** Cancels the linger timer, while one is armed. */
  cancelLinger: (() => void) | undefined;
  /** The membership this batch's homes were computed against. */
  members: readonly unknown[];
  /** Sends of this batch that threw (each counts as an attempt for every record in it). */
  log: AttemptRecord[] | undefined;
  /** A transport's own state for this batch across attempts (the S3 object key). */
  tag: unknown;
  #body: Buffer | undefined;

  constructor(
    /** The home shard id of a keyed batch ('' for keyed records with no home yet), else undefined. */
    readonly home: string | undefined,
    /** The key the batch runs with (its first record's): under strict affinity, the home's. */
    readonly key: Key | undefined,
    members: readonly unknown[],
    encoded: boolean,
    /** Balancer-clock time of the first record. */
    readonly openedAtMs: number,
  ) {
    this.members = members;
    if (encoded) this.chunks = [];
    if (home !== undefined) this.keys = [];
  }

  get count(): number {
    return this.records.length;
  }

  /** Records that were sent before, in another batch. */
  get carriedCount(): number {
    const carried = this.carried;
    if (carried === undefined) return 0;
    let n = 0;
    for (const c of carried) if (c !== undefined) n++;
    return n;
  }

  push(
    record: Rec,
    size: number,
    chunk: Chunk | undefined,
    chunkLength: number,
    key: Key | undefined,
    carried: Carried | undefined,
  ): void {
    this.records.push(record);
    this.sizes.push(size);
    this.bytes += size;
    if (this.chunks !== undefined) {
      this.chunks.push(chunk!);
      if (this.bodyBytes >= 0) this.bodyBytes += chunkLength;
      if (typeof chunk !== 'string') this.allText = false;
    }
    this.keys?.push(key);
    if (carried !== undefined) {
      this.carried ??= new Array<Carried | undefined>(this.records.length - 1).fill(undefined);
      this.carried.push(carried);
    } else this.carried?.push(undefined);
    this.#body = undefined;
  }

  /** Keeps only the records `keep` says yes to (in order); returns how many were removed. */
  retain(keep: (i: number) => boolean): number {
    const records: Rec[] = [];
    const sizes: number[] = [];
    const chunks: Chunk[] | undefined = this.chunks === undefined ? undefined : [];
    const keys: (Key | undefined)[] | undefined = this.keys === undefined ? undefined : [];
    const carried: (Carried | undefined)[] | undefined =
      this.carried === undefined ? undefined : [];
    let bytes = 0;
    for (let i = 0; i < this.records.length; i++) {
      if (!keep(i)) continue;
      records.push(this.records[i]!);
      sizes.push(this.sizes[i]!);
      bytes += this.sizes[i]!;
      chunks?.push(this.chunks![i]!);
      keys?.push(this.keys![i]);
      carried?.push(this.carried![i]);
    }
    const left = this.records.length - records.length;
    this.records = records;
    this.sizes = sizes;
    this.chunks = chunks;
    this.keys = keys;
    this.carried = carried;
    this.bytes = bytes;
    this.bodyBytes = -1;
    this.#body = undefined;
    return left;
  }

  /**
   * The body of this batch in `encoder`'s format, built once and kept for retries (until the
   * records change).
   */
  body(encoder: RecordEncoder<unknown>): Buffer {
    if (this.#body !== undefined) return this.#body;
    const chunks = this.chunks ?? [];
    let bytes = this.bodyBytes;
    if (bytes < 0) {
      // Records were removed: measure what is left (rare: retries and membership changes).
      bytes = 0;
      for (const chunk of chunks) bytes += chunkBytes(chunk) + encoder.separator.length;
    }
    const framing =
      chunks.length === 0 ? encoder.open.length + encoder.close.length : framingBytes(encoder);
    this.#body = writeBody(chunks, encoder, bytes + framing, this.allText);
    return this.#body;
  }
}
