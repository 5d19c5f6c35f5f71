/**
 * The account of an ingestion: every record taken from the source ends, exactly once, written,
 * failed or uncertain. The ledger counts them (and what is still held), keeps the failures, calls
 * `onFailed`, `onUncertain` and `onProgress` — a heartbeat every `progressMs` while the ingestion
 * runs, stalls included — and tells whoever waits when records settle.
 */
import { rethrowLater } from '../base/callbacks.js';
import { isShardwiseError } from '../base/errors.js';
import type { Clock } from '../base/types.js';
import type { DeadLetterSink } from '../dead-letters/types.js';
import type { IngestProgress, IngestSummary, ShardProgress } from './types.js';
import type { Watermark } from './watermark.js';

/** What the ledger reads from the balancer for progress reports. */
export interface LedgerHost {
  readonly clock: Clock;
  stats(): { queued: number; inFlight: number };
}

/** Who hears of failed records, and how many the summary keeps. */
export type FailureHooks<Rec> = Pick<LedgerHooks<Rec>, 'onFailed' | 'onUncertain' | 'keepFailures'>;

/** The ledger's callbacks (each optional). */
export interface LedgerHooks<Rec> {
  onFailed?: ((record: Rec, error: unknown) => void) | undefined;
  onUncertain?: ((record: Rec, error: unknown) => void) | undefined;
  /** Failed records `summary.failures` keeps, the first ones (default: all). */
  keepFailures?: number;
  onProgress?: ((progress: IngestProgress) => void) | undefined;
  /** Time between two heartbeats, ms (default 1 000). */
  progressMs?: number;
}

export class Ledger<Rec> {
  readonly summary: IngestSummary<Rec>;
  /** Records taken and not yet settled. */
  held = 0;
  /** Bytes of the held records whose size is known (batches measure every record). */
  heldBytes = 0;
  /** The first error a callback threw: the ingestion stops reading on it. */
  callbackError: { error: unknown } | undefined;
  /** The first failed record, kept whatever `keepFailures` keeps (a write stream errors with it). */
  firstFailure: { record: Rec; error: unknown } | undefined;
  /** Called after records settle (the sinks wake producers waiting for room). */
  onSettle: (() => void) | undefined;
  /** Called when a callback first throws (the ingestion stops reading). */
  onCallbackError: (() => void) | undefined;
  /** What the sink holds per shard and why it waits, for progress reports. */
  shards: (() => Record<string, ShardProgress>) | undefined;
  /** The records settled in source order (checkpoints): set before the first record is taken. */
  watermark: Watermark | undefined;
  /**
   * Where records not written go before they count as settled (the `deadLetter` option): failed
   * ones, and uncertain ones too with `uncertain`.
   */
  deadLetters: { sink: DeadLetterSink; uncertain: boolean } | undefined;
  /** The dead letters could not be kept: the ingestion stops on it (no record is dropped). */
  deadLetterError: { error: unknown } | undefined;
  /** Appends to the dead letters not yet kept: their records are still held. */
  #deadPending = 0;
  /** Records taken so far: the next one's index in the source. */
  #taken = 0;
  readonly #host: LedgerHost;
  readonly #hooks: LedgerHooks<Rec>;
  readonly #startedMs: number;
  #lastProgressMs: number;
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;
  #closed = false;
  #cancelBeat: (() => void) | undefined;

  constructor(host: LedgerHost, hooks: LedgerHooks<Rec>) {
    this.#host = host;
    this.#hooks = hooks;
    this.#startedMs = host.clock.now();
    this.#lastProgressMs = this.#startedMs;
    const failures: IngestSummary<Rec>['failures'] = [];
    this.summary = {
      written: 0,
      failed: 0,
      uncertain: 0,
      resent: 0,
      failures,
      errors: failures,
      bytes: 0,
      retries: 0,
      durationMs: 0,
      perShard: {},
      batches: 0,
      transit: { raw: 0, wire: 0, received: 0 },
    };
  }

  /** One record was taken from the source: returns its index (0 for the first). */
  take(): number {
    this.held++;
    return this.#taken++;
  }

  /** Record `seq` (its index in the source) was written: the watermark may move past it. */
  mark(seq: number): void {
    this.watermark?.settle(seq);
  }

  /** A held record's size became known. */
  holdBytes(bytes: number): void {
    this.heldBytes += bytes;
  }

  /** `count` records were written to `shardId`, carrying `bytes`. */
  wrote(count: number, bytes: number, shardId: string): void {
    if (count === 0) return;
    const s = this.summary;
    this.held -= count;
    this.heldBytes -= bytes;
    s.written += count;
    s.bytes += bytes;
    s.perShard[shardId] = (s.perShard[shardId] ?? 0) + count;
    this.#settled();
  }

  /**
   * `record` (index `seq` in the source, −1 when not tracked) is not written, for good: listed
   * with `error`, reported to `onFailed` — once it is in the dead letters, when there are some.
   */
  fail(record: Rec, error: unknown, bytes = 0, seq = -1): void {
    if (this.#closed) {
      this.#failedLate(record, error);
      return;
    }
    this.#notWritten(record, error, bytes, seq, 'failed');
  }

  /**
   * `record` was sent and no answer came (`error`: an `UncertainWriteError`): listed, reported to
   * `onUncertain` (or `onFailed` without it).
   */
  uncertain(record: Rec, error: unknown, bytes = 0, seq = -1): void {
    this.#notWritten(record, error, bytes, seq, 'uncertain');
  }

  /**
   * A record not written settles — at once, or once its dead letter is kept (for a file: written
   * and `fsync`ed). A dead letter that cannot be kept stops the ingestion; the record still counts
   * (never dropped), but the watermark does not pass it: a resumed load reads it again.
   */
  #notWritten(
    record: Rec,
    error: unknown,
    bytes: number,
    seq: number,
    outcome: 'failed' | 'uncertain',
  ): void {
    const dead = this.deadLetters;
    // Refused because the balancer closed: never sent, and not the record's fault. It is not
    // dead-lettered, and the watermark does not pass it: a resumed load sends it.
    if (isShardwiseError(error, 'SHARDWISE_CLOSED')) {
      this.#count(record, error, bytes, seq, outcome, false);
      return;
    }
    if (
      dead === undefined ||
      (outcome === 'uncertain' && !dead.uncertain) ||
      this.deadLetterError !== undefined
    ) {
      this.#count(
        record,
        error,
        bytes,
        seq,
        outcome,
        dead === undefined || (outcome === 'uncertain' && !dead.uncertain),
      );
      return;
    }
    this.#deadPending++;
    dead.sink.append({ record, error, outcome }).then(
      () => {
        this.#deadPending--;
        this.#count(record, error, bytes, seq, outcome, true);
      },
      (thrown: unknown) => {
        this.#deadPending--;
        if (this.deadLetterError === undefined) {
          this.deadLetterError = { error: thrown };
          this.onCallbackError?.();
        }
        this.#count(record, error, bytes, seq, outcome, false);
      },
    );
  }

  /** Counts a record not written as settled (`durable`: the watermark may pass it). */
  #count(
    record: Rec,
    error: unknown,
    bytes: number,
    seq: number,
    outcome: 'failed' | 'uncertain',
    durable: boolean,
  ): void {
    const s = this.summary;
    const hooks = this.#hooks;
    if (outcome === 'failed') s.failed++;
    else s.uncertain++;
    const hook = outcome === 'failed' ? hooks.onFailed : (hooks.onUncertain ?? hooks.onFailed);
    if (durable && seq >= 0) this.watermark?.settle(seq);
    this.held--;
    this.heldBytes -= bytes;
    this.firstFailure ??= { record, error };
    if (s.failures.length < (this.#hooks.keepFailures ?? Number.POSITIVE_INFINITY)) {
      s.failures.push({ record, error });
    }
    if (hook !== undefined) {
      try {
        hook(record, error);
      } catch (thrown) {
        this.#callbackThrew(thrown);
      }
    }
    this.#settled();
  }

  /**
   * `record` was taken when the ingestion stopped (its signal aborted): failed, never sent — not
   * dead-lettered, and not passed by the watermark, so a resumed load reads it again.
   */
  failUnsent(record: Rec, error: unknown): void {
    if (this.#closed) {
      this.#failedLate(record, error);
      return;
    }
    this.#count(record, error, 0, -1, 'failed', false);
  }

  /** `count` record sends went after a send of the same records that may have been stored. */
  resent(count: number): void {
    this.summary.resent += count;
  }

  /** `count` record sends were retries. */
  retried(count: number): void {
    this.summary.retries += count;
  }

  /** A batch was sent (re-sends included). */
  sent(): void {
    this.summary.batches++;
  }

  /** Dead letters still being kept (their records count as held until then). */
  get deadPending(): number {
    return this.#deadPending;
  }

  /**
   * A batch's send put `raw` bytes on the wire as `wire` bytes, or took `received` off it. A
   * report after the account closed (an aborted request's, as it ends) leaves the final summary
   * alone; the balancer's ledger still counts it.
   */
  transit(raw: number, wire: number, received: number): void {
    if (this.#closed) return;
    const t = this.summary.transit;
    t.raw += raw;
    t.wire += wire;
    t.received += received;
  }

  /** Resolves once every record taken has settled. */
  idle(): Promise<void> {
    if (this.held === 0) return Promise.resolve();
    this.#idle ??= deferredVoid();
    return this.#idle.promise;
  }

  /**
   * Starts the heartbeat: `onProgress` every `progressMs` until the account closes, whether or not
   * records settle meanwhile — a progress bar never freezes in a stall.
   */
  startHeartbeat(): void {
    if (this.#hooks.onProgress === undefined || this.#closed) return;
    this.#armBeat();
  }

  #armBeat(): void {
    this.#cancelBeat?.();
    const clock = this.#host.clock;
    const every = this.#hooks.progressMs ?? 1_000;
    this.#cancelBeat = clock.setTimer(
      () => {
        this.#cancelBeat = undefined;
        if (this.#closed) return;
        this.#progress(true);
        if (!this.#closed && this.callbackError === undefined) this.#armBeat();
      },
      Math.max(0, this.#lastProgressMs + every - clock.now()),
    );
  }

  /** Ends the account: its duration, and a last progress report. Later settlements change nothing. */
  close(): IngestSummary<Rec> {
    if (!this.#closed) {
      this.#closed = true;
      this.#cancelBeat?.();
      this.#cancelBeat = undefined;
      this.summary.durationMs = this.#host.clock.now() - this.#startedMs;
      this.#progress(true);
    }
    return this.summary;
  }

  /**
   * A record the source yielded after the account closed (it was still producing when the
   * ingestion stopped): `onFailed` hears of it, the final summary does not change.
   */
  #failedLate(record: Rec, error: unknown): void {
    try {
      this.#hooks.onFailed?.(record, error);
    } catch (thrown) {
      rethrowLater(thrown);
    }
  }

  #settled(): void {
    if (this.#hooks.onProgress !== undefined) this.#progress(false);
    this.onSettle?.();
    if (this.held === 0 && this.#idle !== undefined) {
      const idle = this.#idle;
      this.#idle = undefined;
      idle.resolve();
    }
  }

  #progress(force: boolean): void {
    const onProgress = this.#hooks.onProgress;
    if (onProgress === undefined || this.callbackError !== undefined) return;
    const now = this.#host.clock.now();
    if (!force && now - this.#lastProgressMs < (this.#hooks.progressMs ?? 1_000)) return;
    this.#lastProgressMs = now;
    // A report that came from a settlement moves the next heartbeat back by as much.
    if (!force && this.#cancelBeat !== undefined) this.#armBeat();
    const { queued, inFlight } = this.#host.stats();
    const s = this.summary;
    try {
      onProgress({
        written: s.written,
        failed: s.failed,
        uncertain: s.uncertain,
        resent: s.resent,
        bytes: s.bytes,
        retries: s.retries,
        batches: s.batches,
        held: this.held,
        queued,
        inFlight,
        elapsedMs: now - this.#startedMs,
        perShard: { ...s.perShard },
        shards: this.shards?.() ?? {},
        transit: { ...s.transit },
      });
    } catch (thrown) {
      this.#callbackThrew(thrown);
    }
  }

  /** A callback of the caller's threw: the ingestion stops reading (the first one is kept). */
  callbackThrew(thrown: unknown): void {
    this.#callbackThrew(thrown);
  }

  #callbackThrew(thrown: unknown): void {
    if (this.callbackError !== undefined) return;
    this.callbackError = { error: thrown };
    this.onCallbackError?.();
  }
}

export function deferredVoid(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
