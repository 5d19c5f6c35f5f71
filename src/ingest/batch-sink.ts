/**
 * Batches: each record is keyed, measured (and encoded, when the body is built here) and placed
 * in its home's open batch (`accumulator.ts`); the sender (`sender.ts`) takes closed batches to
 * the balancer. Backpressure is per home: each keyed home may hold its share of the held bounds
 * (`maxHeldRecords` and `maxHeldBytes` over the membership), so the source pauses only when the
 * next record's own home is full — a blocked home fills its share and no more, and the other
 * homes keep their records flowing until the source reaches one for it.
 */
import { ConfigError } from '../base/errors.js';
import type { Key } from '../base/types.js';
import { Accumulator, CLOSED, OPENED } from './accumulator.js';
import { framingBytes, ndjsonSize, type RecordEncoder } from './encoders.js';
import type { Home } from './home.js';
import { deferredVoid, type Ledger } from './ledger.js';
import { type ResolvedBatch, recordRetryOf, runRetryOf } from './options.js';
import { type BatchPrepare, type BatchSender, Sender } from './sender.js';
import type { Sink } from './sink.js';
import {
  INGEST_VIEW,
  type IngestView,
  type RunnerLike,
  type ShardProgress,
  type ShardWait,
} from './types.js';

export interface BatchSinkOptions<T, Rec> {
  /** The option path errors name (`ingest`, `http.ingest` …). */
  field: string;
  key: ((record: Rec) => unknown) | undefined;
  idempotent: boolean;
  batch: ResolvedBatch<Rec>;
  /** The ingestion's own `deliveryTimeoutMs`; undefined: the balancer's. */
  deliveryTimeoutMs: number | undefined;
  /** `ordering: 'key'`. */
  ordered: boolean;
  /** Builds the body here (transports): each record is encoded as it is taken. */
  encoder: RecordEncoder<Rec> | undefined;
  send: BatchSender<T, Rec>;
  /** Readies each batch before its run (a transport compresses its body). */
  prepare?: BatchPrepare<Rec> | undefined;
}

/** A record taken whose home has no room yet: it is placed as soon as its home has. */
interface Pending<Rec> {
  record: Rec;
  key: Key | undefined;
  home: Home<Rec>;
  size: number;
  /** Its delivery deadline, from when it was taken (it may wait a while for room). */
  deadlineMs: number;
  /** Its index in the source. */
  seq: number;
}

export class BatchSink<T, Rec> implements Sink<Rec> {
  readonly #runner: RunnerLike<T>;
  readonly #view: IngestView;
  readonly #ledger: Ledger<Rec>;
  readonly #o: BatchSinkOptions<T, Rec>;
  readonly #acc: Accumulator<Rec>;
  readonly #sender: Sender<T, Rec>;
  readonly #size: (record: Rec) => number;
  readonly #deliveryTimeoutMs: number;
  #pending: Pending<Rec> | undefined;
  #room: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(runner: RunnerLike<T>, ledger: Ledger<Rec>, options: BatchSinkOptions<T, Rec>) {
    this.#runner = runner;
    this.#view = runner[INGEST_VIEW]();
    this.#ledger = ledger;
    this.#o = options;
    const { batch, encoder, field } = options;
    if (options.ordered && runner.picker.keyed !== true) {
      throw new ConfigError(
        `${field}.ordering`,
        "can be 'key' only with a keyed picker (consistentHash()): records of a key keep their order on the key's home",
        'key',
      );
    }
    this.#size = batch.size ?? (ndjsonSize() as (record: Rec) => number);
    this.#deliveryTimeoutMs = options.deliveryTimeoutMs ?? this.#view.deliveryTimeoutMs;
    this.#acc = new Accumulator<Rec>(
      {
        maxRecords: batch.maxRecords,
        maxRecordBytes:
          batch.maxBytes -
          (encoder === undefined ? 0 : framingBytes(encoder as RecordEncoder<unknown>)),
        lingerMs: batch.lingerMs,
        encoder,
        maxCapacity: Math.min(batch.maxBytes + 64, 64 * 1024 * 1024),
        keepRecords: batch.keepRecords,
        deliveryTimeoutMs: this.#deliveryTimeoutMs,
        trackSeqs: ledger.watermark !== undefined,
      },
      runner.clock,
      () => runner.shards,
    );
    this.#sender = new Sender<T, Rec>(runner, ledger, this.#acc, {
      field,
      send: options.send,
      idempotent: options.idempotent,
      runRetry: runRetryOf(batch.retry, this.#view.retry) as never,
      recordRetry: recordRetryOf(batch.retry, this.#view.retry),
      deliveryTimeoutMs: this.#deliveryTimeoutMs,
      ordered: options.ordered,
      prepare: options.prepare,
    });
    ledger.onSettle = () => this.#settled();
    ledger.shards = () => this.#progress();
    ledger.startHeartbeat();
  }

  add(record: Rec, seq: number): void {
    const o = this.#o;
    let key: Key | undefined;
    let size: number;
    try {
      key = o.key === undefined ? undefined : checkKey(o.field, o.key(record));
      // With an encoder the size is the encoded length unless `size` says otherwise (-1).
      if (o.encoder === undefined) size = checkSize(o.field, this.#size(record));
      else size = o.batch.size === undefined ? -1 : checkSize(o.field, o.batch.size(record));
    } catch (error) {
      // A record whose key or size fails is reported failed; the ingestion goes on.
      this.#ledger.fail(record, error, 0, seq);
      return;
    }
    const home = this.#acc.home(this.#homeOf(key));
    if (this.#probing(home)) {
      // Down: its records fail at once, but for the one batch that probes it.
      this.#ledger.fail(record, home.down, 0, seq);
      return;
    }
    if (!this.#roomFor(home)) {
      const deadlineMs = this.#runner.clock.now() + this.#deliveryTimeoutMs;
      this.#pending = { record, key, home, size, deadlineMs, seq };
      // Its home waits on what it holds: send it now, full or not — as Kafka's accumulator
      // treats batches as ready while a producer waits for buffer memory.
      if (this.#acc.flush(home)) this.#sender.pump();
      return;
    }
    this.#place(record, key, home, size, Number.POSITIVE_INFINITY, seq);
  }

  wait(): Promise<void> | undefined {
    if (this.#pending === undefined && !this.#overall()) {
      return this.#sender.backlog(this.#acc.unkeyed);
    }
    if (this.#pending === undefined) {
      // The whole bound is reached (unkeyed records, or a mixed ingestion): every open batch goes.
      let flushed = false;
      for (const home of this.#acc.all()) flushed = this.#acc.flush(home) || flushed;
      if (flushed) this.#sender.pump();
      if (!this.#overall()) return undefined;
    }
    this.#room ??= deferredVoid();
    return this.#room.promise;
  }

  end(): void {
    this.#acc.end();
    this.#sender.pump();
  }

  /**
   * Places a record in its home's batch (`deadlineMs`: its own delivery deadline, Infinity for one
   * just taken); a record that cannot be encoded fails on its own.
   */
  #place(
    record: Rec,
    key: Key | undefined,
    home: Home<Rec>,
    size: number,
    deadlineMs: number,
    seq: number,
  ): void {
    const acc = this.#acc;
    let placed: number;
    try {
      placed = acc.place(home, record, key, size, undefined, undefined, deadlineMs, seq);
    } catch (error) {
      this.#ledger.fail(record, error, 0, seq);
      return;
    }
    this.#ledger.holdBytes(acc.lastSize);
    if (placed === CLOSED) this.#sender.pump();
    else if (placed === OPENED) this.#sender.lingerEndsAt(home.lingerEndsMs);
  }

  /**
   * The record in hand (taken, so counted in the ledger's `held`) may join `home`: the whole
   * holds less than the bounds without it, and a keyed home less than its share — the bounds
   * split evenly over the membership.
   */
  #roomFor(home: Home<Rec>): boolean {
    const ledger = this.#ledger;
    const batch = this.#o.batch;
    if (ledger.held - 1 >= batch.maxHeldRecords || ledger.heldBytes >= batch.maxHeldBytes) {
      return false;
    }
    if (home.id === undefined) return true;
    const homes = Math.max(1, this.#runner.shards.length);
    return (
      home.held < Math.max(1, Math.floor(batch.maxHeldRecords / homes)) &&
      home.heldBytes < Math.max(1, Math.floor(batch.maxHeldBytes / homes))
    );
  }

  /** `home` is down and its one probing batch is out: its records fail at once. */
  #probing(home: Home<Rec>): home is Home<Rec> & { down: Error } {
    return home.down !== undefined && (home.running > 0 || home.ready.length > 0);
  }

  /** Records (or bytes) held across every home reach the bounds: take no more now. */
  #overall(): boolean {
    const ledger = this.#ledger;
    const batch = this.#o.batch;
    return ledger.held >= batch.maxHeldRecords || ledger.heldBytes >= batch.maxHeldBytes;
  }

  /** Records settled: a record waiting for its home's room is placed once there is room. */
  #settled(): void {
    const pending = this.#pending;
    if (pending !== undefined) {
      const home = pending.home;
      if (this.#probing(home)) {
        this.#pending = undefined;
        this.#ledger.fail(pending.record, home.down, 0, pending.seq);
      } else if (this.#roomFor(home)) {
        this.#pending = undefined;
        this.#place(
          pending.record,
          pending.key,
          home,
          pending.size,
          pending.deadlineMs,
          pending.seq,
        );
      }
    }
    // The source goes on once nothing waits for room: no record in hand, the whole below bounds.
    if (this.#room !== undefined && this.#pending === undefined && !this.#overall()) {
      const room = this.#room;
      this.#room = undefined;
      room.resolve();
    }
  }

  /** The home a key belongs to: its shard's; keyed records with no home yet wait together. */
  #homeOf(key: Key | undefined): string | undefined {
    if (key === undefined) return undefined;
    const runner = this.#runner;
    return runner.homeOf(key) ?? (runner.picker.keyed === true ? '' : undefined);
  }

  /** Each shard: what this ingestion holds for it, and why it waits (for progress reports). */
  #progress(): Record<string, ShardProgress> {
    const shards = this.#runner.shards;
    const rtts = shards.map((s) => s.rttMs).sort((a, b) => a - b);
    const median = rtts.length === 0 ? 0 : rtts[rtts.length >> 1]!;
    const written = this.#ledger.summary.perShard;
    const out: Record<string, ShardProgress> = {};
    for (const shard of shards) {
      const home = this.#acc.homes.get(shard.id);
      const entry: ShardProgress = {
        held: home?.held ?? 0,
        ready: home?.ready.length ?? 0,
        inFlight: shard.inFlight,
        written: written[shard.id] ?? 0,
      };
      const unkeyed = this.#acc.unkeyed;
      const waits =
        (home !== undefined &&
          (home.ready.length > 0 || this.#pending?.home === home || home.running > 0)) ||
        unkeyed.ready.length > 0 ||
        unkeyed.running > 0;
      let waiting: ShardWait | undefined;
      if (home?.down !== undefined) waiting = 'down';
      else if (waits) {
        const blocked = this.#view.blocked(shard);
        if (blocked === 'ejected') waiting = 'ejected';
        else if (blocked === 'pushback') waiting = 'pushBack';
        else if (blocked === 'capped' || (home !== undefined && home.ready.length > 0)) {
          waiting = median > 0 && shard.rttMs >= 4 * median ? 'slow' : 'cap';
        }
      }
      if (waiting !== undefined) entry.waiting = waiting;
      out[shard.id] = entry;
    }
    return out;
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
