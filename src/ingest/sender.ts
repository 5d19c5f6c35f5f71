/**
 * The sender: it pulls ready batches from the accumulator and hands each to the balancer as one
 * run — Kafka's `Sender`, the path running one way (records → accumulator → sender → balancer).
 * It takes a home's batch only while that home has fewer of its batches in the balancer than the
 * shard can run (its cap, plus one waiting to go), so a blocked or slow home holds only its own
 * batches, never a slot or a queue place another home's batch waits for. Unkeyed batches go
 * while the balancer has room anywhere; the picker chooses among the shards that can take them.
 *
 * What comes back settles the batch's records: written; refused one by one (sent again, alone of
 * their batch, after a backoff, under the record retry rule); uncertain (sent, no answer);
 * rejected (split in halves, down to the records at fault); too large (split at once); or failed
 * for good. A batch is never older than its records' delivery deadline: one left waiting past it
 * fails, and a home unreachable that long is down — its records then fail at once, but for one
 * batch at a time that probes it.
 */

import type { RunContext } from '../admission/run.js';
import {
  type AttemptRecord,
  messageOf,
  RecordTooLargeError,
  RetriesExhaustedError,
  ShardUnavailableError,
  UncertainWriteError,
} from '../base/errors.js';
import type { ShardState } from '../base/types.js';
import { backoffDelay } from '../retry/options.js';
import { spendsNoAttempt } from '../retry/policy.js';
import type { Accumulator } from './accumulator.js';
import type { Batch, Carried } from './batch.js';
import { checkFailures } from './failures.js';
import type { Home } from './home.js';
import { deferredVoid, type Ledger } from './ledger.js';
import type { ResolvedRecordRetry } from './options.js';
import { lastError, readFailure, shardOf } from './outcome.js';
import { RecordBudget } from './record-budget.js';
import {
  type BatchContext,
  type BatchSendResult,
  INGEST_VIEW,
  type IngestView,
  type RecordFailure,
  type RunnerLike,
} from './types.js';

/** Sends one batch on the shard the balancer chose. */
export type BatchSender<T, Rec> = (
  shard: ShardState<T>,
  batch: Batch<Rec>,
  ctx: BatchContext,
) => Promise<BatchSendResult>;

/**
 * Readies a batch before its run (a transport compresses its body): a promise while there is work
 * to do, undefined when the batch is ready already. A rejection fails the batch's records with
 * its error.
 */
export type BatchPrepare<Rec> = (batch: Batch<Rec>) => Promise<void> | undefined;

export interface SenderOptions<T, Rec> {
  /** The option path errors name (`ingest`, `http.ingest` …). */
  field: string;
  send: BatchSender<T, Rec>;
  idempotent: boolean;
  /** The batches' own retry rule (`batch.retry` given), for each run; undefined: the balancer's. */
  runRetry: { attempts: number; backoff: { baseMs: number; maxMs: number } } | false | undefined;
  /** How records refused one by one are sent again. */
  recordRetry: ResolvedRecordRetry | false;
  /** How long a record may wait in all, ms, from when it was taken. */
  deliveryTimeoutMs: number;
  /** `ordering: 'key'`: one batch per home in the balancer; a retry or a split goes first. */
  ordered: boolean;
  /**
   * Readies each batch before it is handed to the balancer (off the balancer: no shard slot is
   * held meanwhile, and the next batch is encoded while this one is prepared).
   */
  prepare?: BatchPrepare<Rec> | undefined;
}

/** What an attempt that sent its batch hands to settlement. */
interface Sent {
  shardId: string;
  /** Sends of its records counted against the retry rule, this one included. */
  attempt: number;
  failed: readonly RecordFailure[] | undefined;
}

/** An attempt found nothing left to send (every record failed or moved home before it). */
const NOTHING_SENT: Sent = { shardId: '', attempt: 0, failed: undefined };

/** How long a down home's probe batch waits for it, at most, ms: its records fail after that. */
export const DOWN_PROBE_WAIT_MS = 5_000;

/** The most batches one home may have in the balancer at once (a cap of Infinity included). */
const MAX_WINDOW = 4_096;

/**
 * Splits of refused batches an ingestion may make before any record is written; each record
 * written allows a tenth of one more. Finding one bad record in 5 000 takes 13 splits; a shard
 * that refuses everything would otherwise cost a request per record.
 */
export const SPLITS_FLOOR = 32;
export const SPLITS_PER_WRITTEN = 0.1;

export class Sender<T, Rec> {
  readonly #runner: RunnerLike<T>;
  readonly #view: IngestView;
  readonly #ledger: Ledger<Rec>;
  readonly #acc: Accumulator<Rec>;
  readonly #o: SenderOptions<T, Rec>;
  readonly #budget: RecordBudget | undefined;
  /** Batch ids: a random prefix for this ingestion (deduplication across processes), then a count. */
  readonly #idPrefix: string;
  #seq = 0;
  /** The membership the shard lookup was made from, and the lookup. */
  #members: readonly ShardState<T>[] | undefined;
  #byId = new Map<string, ShardState<T>>();
  #timerAt = Number.POSITIVE_INFINITY;
  #cancelTimer: (() => void) | undefined;
  /** Refused batches split so far (bounded: see {@link SPLITS_FLOOR}). */
  #splits = 0;
  /** A pump is under way; `#again`: something changed meanwhile, look once more. */
  #pumping = false;
  #again = false;

  constructor(
    runner: RunnerLike<T>,
    ledger: Ledger<Rec>,
    accumulator: Accumulator<Rec>,
    options: SenderOptions<T, Rec>,
  ) {
    this.#runner = runner;
    this.#view = runner[INGEST_VIEW]();
    this.#ledger = ledger;
    this.#acc = accumulator;
    this.#o = options;
    const retry = options.recordRetry;
    this.#budget =
      retry === false || retry.budget === false
        ? undefined
        : new RecordBudget(retry.budget, runner.clock);
    const word = () =>
      Math.floor(runner.random() * 0x1_0000_0000)
        .toString(16)
        .padStart(8, '0');
    this.#idPrefix = `${word()}${word()}`;
  }

  /** The shard `id` names now, if it is a member. */
  shard(id: string | undefined): ShardState<T> | undefined {
    if (id === undefined) return undefined;
    const members = this.#runner.shards;
    if (members !== this.#members) {
      this.#members = members;
      this.#byId = new Map(members.map((s) => [s.id, s]));
    }
    return this.#byId.get(id);
  }

  /**
   * Something changed (a batch closed or opened, records settled): send what may go now, and
   * arm the timer for the next thing to look at. Records settling while it runs (a batch past
   * its deadline fails) may place a waiting record and ask again: it goes round once more.
   */
  pump(): void {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    let now = 0;
    let next = Number.POSITIVE_INFINITY;
    try {
      do {
        this.#again = false;
        now = this.#runner.clock.now();
        next = this.#acc.closeLingered(now);
        for (const home of this.#acc.all()) {
          const due = this.#pumpHome(home, now);
          if (due < next) next = due;
        }
      } while (this.#again);
    } finally {
      this.#pumping = false;
    }
    this.#wakeAt(next, now);
  }

  /** A batch opened: its linger ends at `atMs` (the timer then closes it and sends it). */
  lingerEndsAt(atMs: number): void {
    if (this.#pumping) this.#again = true;
    else if (atMs < this.#timerAt) this.#wakeAt(atMs, this.#runner.clock.now());
  }

  /** Stops the sender's timer (the ingestion is over). */
  stop(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  /**
   * Hands `home`'s ready batches to the balancer while it has room for them; fails those whose
   * delivery deadline passed while they waited. Returns when it must look again (a backoff's end,
   * a waiting batch's deadline), or Infinity.
   */
  #pumpHome(home: Home<Rec>, now: number): number {
    const ready = home.ready;
    let next = Number.POSITIVE_INFINITY;
    let backlogged = false;
    let i = 0;
    while (i < ready.length) {
      const batch = ready[i]!;
      if (batch.deadlineMs <= now) {
        ready.splice(i, 1);
        this.#expire(home, batch, now);
        continue;
      }
      if (home.running >= this.#window(home)) {
        if (batch.deadlineMs < next) next = batch.deadlineMs;
        backlogged = batch.notBeforeMs <= now;
        break;
      }
      if (batch.notBeforeMs > now) {
        if (batch.notBeforeMs < next) next = batch.notBeforeMs;
        // In key order nothing passes a retry; otherwise later batches go while it backs off.
        if (this.#o.ordered) break;
        i++;
        continue;
      }
      ready.splice(i, 1);
      this.#start(home, batch, now);
    }
    home.backlogged = backlogged;
    if (!backlogged && home.drained !== undefined) {
      const drained = home.drained;
      home.drained = undefined;
      drained.resolve();
    }
    return next;
  }

  /**
   * Resolves once `home` has no batch left that could go but for room in the balancer; undefined
   * when it has none now. Unkeyed records wait on it: the source is then read no further ahead of
   * the shards than a batch (fewer live records, less work for the garbage collector), while a
   * keyed home may fill its share of the held bounds, so that a slow one never stalls the others.
   */
  backlog(home: Home<Rec>): Promise<void> | undefined {
    if (!home.backlogged) return undefined;
    home.drained ??= deferredVoid();
    return home.drained.promise;
  }

  /**
   * Hands `batch` to the balancer — once the transport has prepared it, when it must. A batch
   * being prepared counts among its home's running batches, so windows and key order hold
   * meanwhile; one whose deadline passed meanwhile expires, and one whose preparation failed
   * fails its records with that error.
   */
  #start(home: Home<Rec>, batch: Batch<Rec>, now: number): void {
    const prepare = this.#o.prepare;
    let preparing: Promise<void> | undefined;
    if (prepare !== undefined) {
      try {
        preparing = prepare(batch);
      } catch (error) {
        preparing = Promise.reject(error);
      }
    }
    if (preparing === undefined) {
      this.#submit(home, batch, now);
      return;
    }
    home.running++;
    preparing.then(
      () => {
        home.running--;
        const at = this.#runner.clock.now();
        if (batch.deadlineMs <= at) this.#expire(home, batch, at);
        else this.#submit(home, batch, at);
        this.pump();
      },
      (error: unknown) => {
        home.running--;
        this.#failAll(home, batch, error);
        this.pump();
      },
    );
  }

  /**
   * How many of `home`'s batches may be in the balancer at once: one in key order, or while the
   * home is down (that one probes it); else its shard's cap and one more, ready for the slot the
   * next settlement frees. Unkeyed batches may fill every shard's cap, and one more per shard.
   */
  #window(home: Home<Rec>): number {
    if (this.#o.ordered || home.down !== undefined) return 1;
    if (home.id === undefined) {
      let capacity = 0;
      for (const shard of this.#runner.shards) capacity += shard.limit + 1;
      return Math.min(Math.max(capacity, 1), MAX_WINDOW);
    }
    const shard = this.shard(home.id);
    // A home that left the membership: its batches go, and each record finds its new home.
    if (shard === undefined) return home.id === '' ? 1 : MAX_WINDOW;
    return Math.min(shard.limit + 1, MAX_WINDOW);
  }

  #submit(home: Home<Rec>, batch: Batch<Rec>, now: number): void {
    if (batch.id === '') batch.id = this.#newId();
    home.running++;
    const o = this.#o;
    let deliveryTimeoutMs = batch.deadlineMs - now;
    if (home.down !== undefined)
      deliveryTimeoutMs = Math.min(deliveryTimeoutMs, DOWN_PROBE_WAIT_MS);
    const options = {
      key: batch.key,
      bytes: batch.bytes,
      idempotent: o.idempotent,
      deliveryTimeoutMs,
      ...(o.runRetry === undefined ? {} : { retry: o.runRetry }),
    };
    this.#runner
      .run((shard, ctx) => this.#attempt(home, batch, shard, ctx), options)
      .then(
        (sent) => {
          home.running--;
          this.#sent(home, batch, sent);
          this.pump();
        },
        (error: unknown) => {
          home.running--;
          this.#failed(home, batch, error);
          this.pump();
        },
      );
  }

  /** One attempt: drop records past their attempts, move those whose home moved, send the rest. */
  async #attempt(
    home: Home<Rec>,
    batch: Batch<Rec>,
    shard: ShardState<T>,
    ctx: RunContext,
  ): Promise<Sent> {
    const ledger = this.#ledger;
    if (batch.carried !== undefined || batch.sends > 0) this.#dropExhausted(home, batch);
    if (batch.home !== undefined && batch.members !== this.#runner.shards) {
      this.#rehome(home, batch);
    }
    const count = batch.count;
    if (count === 0) return NOTHING_SENT;
    if (batch.id === '') batch.id = this.#newId();
    const carried = batch.carriedCount;
    if (ctx.attempt > 1) ledger.retried(count);
    else {
      ledger.retried(carried);
      this.#budget?.deposit(count - carried);
    }
    // A send after one that may have been stored: these records may now be stored twice.
    if (batch.uncertain) ledger.resent(count);
    else if (batch.carried !== undefined) ledger.resent(batch.carriedUncertain);
    ledger.sent();
    const batchCtx = new BatchAttempt(ctx, batch.id, ledger);
    // Every send is in the batch's log: one that threw, and one the balancer ended (a timeout,
    // an abort) while it was still pending — it counts as an attempt all the same.
    let noted = false;
    const note = (error: unknown): void => {
      noted = true;
      const record = {
        shardId: shard.id,
        error,
        elapsedMs: this.#runner.clock.now() - batch.openedAtMs,
      };
      if (batch.log === undefined) batch.log = [record];
      else batch.log.push(record);
      if (readFailure(error) === 'uncertain') {
        batch.uncertain = true;
        batch.uncertainShard = shard.id;
      }
      if (!spendsNoAttempt(error, this.#view.strict && batch.home !== undefined)) batch.sends++;
    };
    const unlisten = ctx.onAbort(note);
    let result: BatchSendResult;
    try {
      result = await this.#o.send(shard, batch, batchCtx);
    } catch (error) {
      if (!noted) note(error);
      throw error;
    } finally {
      unlisten();
    }
    return {
      shardId: shard.id,
      attempt: batch.sends + 1,
      failed: failuresOf(this.#o.field, result, count),
    };
  }

  /** Records whose sends, with this attempt, would pass the record retry rule's attempts fail now. */
  #dropExhausted(home: Home<Rec>, batch: Batch<Rec>): void {
    const retry = this.#o.recordRetry;
    if (retry === false) return;
    const max = retry.attempts;
    const carried = batch.carried;
    const attempt = batch.sends + 1;
    const exhausted = (i: number) => (carried?.[i]?.attempts ?? 0) + attempt > max;
    let any = false;
    for (let i = 0; i < batch.count && !any; i++) any = exhausted(i);
    if (!any) return;
    const failing: number[] = [];
    for (let i = 0; i < batch.count; i++) if (exhausted(i)) failing.push(i);
    const records = failing.map((i) => batch.recordAt(i));
    const sizes = failing.map((i) => batch.sizes[i]!);
    const uncertain = failing.map((i) => batch.uncertain || carried?.[i]?.uncertain === true);
    const seqs = failing.map((i) => batch.seqs?.[i] ?? -1);
    const history = failing.map((i) => [...(carried?.[i]?.history ?? []), ...(batch.log ?? [])]);
    batch.retain((i) => !exhausted(i));
    failing.forEach((_, j) => {
      const error = new RetriesExhaustedError(history[j]!, `all ${max} attempts failed`);
      this.#settleOne(home, records[j]!, error, sizes[j]!, uncertain[j]!, seqs[j]!);
    });
  }

  /**
   * The membership changed since the batch's homes were computed: records whose key now lives on
   * another shard than the batch's key leave it for a batch of their new home. The move counts
   * no send, but the batch's earlier sends go with each record.
   */
  #rehome(home: Home<Rec>, batch: Batch<Rec>): void {
    const runner = this.#runner;
    batch.members = runner.shards;
    const target = runner.homeOf(batch.key!);
    const keys = batch.keys!;
    const moving: number[] = [];
    for (let i = 0; i < batch.count; i++) {
      if (runner.homeOf(keys[i]!) !== target) moving.push(i);
    }
    if (moving.length === 0) return;
    const { records, sizes, carried, seqs } = batch;
    // Copies of their encodings first: `retain` writes the batch's body anew.
    const encoded = moving.map((i) => copyOf(batch.encodedAt(i)));
    const leaving = new Set(moving);
    batch.retain((i) => !leaving.has(i));
    const log = batch.log ?? [];
    moving.forEach((i, j) => {
      const before = carried?.[i];
      const sends: Carried | undefined =
        batch.sends === 0 && log.length === 0 && !batch.uncertain
          ? before
          : {
              attempts: (before?.attempts ?? 0) + batch.sends,
              history: [...(before?.history ?? []), ...log],
              uncertain: batch.uncertain || before?.uncertain === true,
            };
      const key = keys[i];
      const to = this.#acc.home(key === undefined ? undefined : (runner.homeOf(key) ?? ''));
      home.release(1, sizes[i]!);
      const seq = seqs?.[i] ?? -1;
      this.#acc.place(to, records[i]!, key, sizes[i]!, sends, encoded[j], batch.deadlineMs, seq);
    });
  }

  /** The batch was sent: its records are written, but those the shard refused. */
  #sent(home: Home<Rec>, batch: Batch<Rec>, sent: Sent): void {
    if (sent === NOTHING_SENT) return;
    // A write reached the home: whatever kept it down is over.
    home.down = undefined;
    const failed = sent.failed;
    const ledger = this.#ledger;
    const seqs = batch.seqs;
    if (failed === undefined || failed.length === 0) {
      home.release(batch.count, batch.bytes);
      ledger.wrote(batch.count, batch.bytes, sent.shardId);
      if (seqs !== undefined) for (const seq of seqs) ledger.mark(seq);
      return;
    }
    const refused = new Map<number, RecordFailure>();
    for (const f of failed) refused.set(f.index, f);
    let count = 0;
    let bytes = 0;
    for (let i = 0; i < batch.count; i++) {
      if (refused.has(i)) continue;
      count++;
      bytes += batch.sizes[i]!;
      if (seqs !== undefined) ledger.mark(seqs[i]!);
    }
    home.release(count, bytes);
    ledger.wrote(count, bytes, sent.shardId);
    this.#retryRefused(home, batch, sent, refused);
  }

  /**
   * Each refused record: failed for good, or sent again in a batch of its own after a backoff,
   * ahead of the home's later batches.
   */
  #retryRefused(
    home: Home<Rec>,
    batch: Batch<Rec>,
    sent: Sent,
    refused: Map<number, RecordFailure>,
  ): void {
    const retry = this.#o.recordRetry;
    const runner = this.#runner;
    const elapsedMs = runner.clock.now() - batch.openedAtMs;
    const again: number[] = [];
    const carriedAgain: Carried[] = [];
    let deepest = 1;
    for (const [i, failure] of refused) {
      const before = batch.carried?.[i];
      const error =
        failure.error ??
        new Error(`shard "${sent.shardId}" reported record ${i} of the batch as not written`);
      const history: AttemptRecord[] = [
        ...(before?.history ?? []),
        ...(batch.log ?? []),
        { shardId: sent.shardId, error, elapsedMs },
      ];
      const attempts = (before?.attempts ?? 0) + sent.attempt;
      const uncertain = batch.uncertain || before?.uncertain === true;
      let final: unknown;
      if (failure.retryable === false || retry === false) {
        const reason = retry === false ? 'retries are off' : 'the error is not retryable';
        final = history.length > 1 ? new RetriesExhaustedError(history, reason) : error;
      } else if (attempts >= retry.attempts) {
        final = new RetriesExhaustedError(history, `all ${retry.attempts} attempts failed`);
      } else if (this.#budget !== undefined && !this.#budget.tryWithdraw()) {
        final = new RetriesExhaustedError(history, 'the retry budget is exhausted');
      }
      if (final !== undefined) {
        const seq = batch.seqs?.[i] ?? -1;
        this.#settleOne(home, batch.recordAt(i), final, batch.sizes[i]!, uncertain, seq);
        continue;
      }
      again.push(i);
      carriedAgain.push({ attempts, history, uncertain });
      if (attempts > deepest) deepest = attempts;
    }
    if (again.length === 0 || retry === false) return;
    // Only the refused records are held through the backoff: their bytes copied into a batch of
    // their own, not the whole batch with every written record in it.
    const retryBatch = batch.take(again, carriedAgain);
    retryBatch.notBeforeMs =
      runner.clock.now() + backoffDelay(deepest, retry.baseMs, retry.maxMs, runner.random);
    this.#acc.requeue(home, retryBatch);
  }

  /** The batch's run failed (after the balancer's retries): read why, then split or settle. */
  #failed(home: Home<Rec>, batch: Batch<Rec>, failure: unknown): void {
    if (batch.count === 0) return;
    let error = failure;
    if (error instanceof ShardUnavailableError) {
      // The run was given what was left of the records' deadline: told as the records waited,
      // from when the oldest was taken, against the deliveryTimeoutMs that was set.
      const d = this.#o.deliveryTimeoutMs;
      const waited = this.#runner.clock.now() - (batch.deadlineMs - d);
      const { shardId, reason } = error;
      error = new ShardUnavailableError(shardId, waited, reason, d);
      // Unreachable for a whole delivery timeout: down until a write reaches it.
      if (reason !== 'capped' && reason !== 'pushback' && home.id !== undefined) {
        home.down ??= new ShardUnavailableError(home.id, waited, 'down');
      }
    } else if (!batch.uncertain) {
      const last = lastError(error);
      const failure = readFailure(last);
      if (failure === 'tooLarge' && batch.count === 1) {
        const shardId = shardOf(last) ?? batch.log?.at(-1)?.shardId ?? '';
        this.#failAll(home, batch, new RecordTooLargeError(shardId, batch.sizes[0]!, last));
        return;
      }
      const splittable =
        failure === 'tooLarge' ||
        (failure === 'rejected' &&
          batch.count > 1 &&
          this.#splits < SPLITS_FLOOR + SPLITS_PER_WRITTEN * this.#ledger.summary.written);
      if (splittable) {
        this.#splits++;
        // Halves go first, in order; a split spends no attempt of their records.
        const [first, second] = batch.split();
        this.#acc.requeue(home, second);
        this.#acc.requeue(home, first);
        return;
      }
    }
    this.#failAll(home, batch, error);
  }

  /** Every record still in the batch settles with `error` (uncertain ones as uncertain). */
  #failAll(home: Home<Rec>, batch: Batch<Rec>, error: unknown): void {
    const carried = batch.carried;
    for (let i = 0; i < batch.count; i++) {
      const before = carried?.[i];
      const own =
        before === undefined
          ? error
          : new RetriesExhaustedError(
              [...before.history, ...(batch.log ?? [])],
              `its last batch failed: ${messageOf(error)}`,
            );
      this.#settleOne(
        home,
        batch.recordAt(i),
        own,
        batch.sizes[i]!,
        batch.uncertain || before?.uncertain === true,
        batch.seqs?.[i] ?? -1,
      );
    }
  }

  /** A batch waited in its home's line past its delivery deadline: its records fail. */
  #expire(home: Home<Rec>, batch: Batch<Rec>, now: number): void {
    const o = this.#o;
    const shard = this.shard(home.id);
    const reason =
      home.down !== undefined
        ? 'down'
        : shard === undefined
          ? 'capped'
          : (this.#view.blocked(shard) ?? 'capped');
    const waited = now - (batch.deadlineMs - o.deliveryTimeoutMs);
    const error = new ShardUnavailableError(home.id ?? '*', waited, reason, o.deliveryTimeoutMs);
    if (reason === 'ejected' && home.id !== undefined) {
      home.down ??= new ShardUnavailableError(home.id, waited, 'down');
    }
    this.#failAll(home, batch, error);
  }

  /** One record settles for good: failed, or uncertain when a send of it may have been stored. */
  #settleOne(
    home: Home<Rec>,
    record: Rec,
    error: unknown,
    size: number,
    uncertain: boolean,
    seq: number,
  ): void {
    home.release(1, size);
    if (uncertain) {
      const shardId = shardOf(lastError(error)) ?? '';
      this.#ledger.uncertain(record, new UncertainWriteError(shardId, error), size, seq);
    } else this.#ledger.fail(record, error, size, seq);
  }

  #newId(): string {
    return `${this.#idPrefix}-${(this.#seq++).toString(36)}`;
  }

  /** Arms the one timer for `atMs` (linger ends, backoffs, deadlines), or stops it for none. */
  #wakeAt(atMs: number, now: number): void {
    if (atMs === this.#timerAt) return;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#timerAt = atMs;
    if (atMs === Number.POSITIVE_INFINITY) return;
    this.#cancelTimer = this.#runner.clock.setTimer(
      () => {
        this.#cancelTimer = undefined;
        this.#timerAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, atMs - now),
    );
  }
}

/**
 * The context a batch `send` gets: the attempt's, with the batch's id, and the bytes the send
 * reports counted in the ingestion's own account (`summary.transit`) as well as the balancer's.
 */
class BatchAttempt implements BatchContext {
  constructor(
    readonly inner: RunContext,
    readonly batchId: string,
    readonly account: Pick<Ledger<unknown>, 'transit'>,
  ) {}

  get signal(): AbortSignal {
    return this.inner.signal;
  }

  get attempt(): number {
    return this.inner.attempt;
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    return this.inner.onAbort(listener);
  }

  // The balancer's ledger first: it checks the figures (a bad one throws, and counts nowhere).
  reportSent(rawBytes: number, wireBytes: number, encoding?: string): void {
    this.inner.reportSent(rawBytes, wireBytes, encoding);
    this.account.transit(rawBytes, wireBytes, 0);
  }

  reportReceived(bytes: number, encoding?: string): void {
    this.inner.reportReceived(bytes, encoding);
    this.account.transit(0, 0, bytes);
  }
}

function copyOf(bytes: Uint8Array | undefined): Uint8Array | undefined {
  return bytes === undefined ? undefined : Uint8Array.prototype.slice.call(bytes);
}

/**
 * The records a `send` result reports refused, checked: `failed` must list distinct indexes of
 * the batch. A result without `failed` (nothing, a number, a response object) means all written.
 */
function failuresOf(
  field: string,
  result: unknown,
  count: number,
): readonly RecordFailure[] | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const failed = (result as { failed?: unknown }).failed;
  if (failed === undefined) return undefined;
  return checkFailures(`${field}.send() result.failed`, failed, count);
}
