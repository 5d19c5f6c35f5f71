/**
 * Batches on their way: each closed batch waits its turn (`ready()`, so the balancer's queue
 * stays within `maxQueued`), then runs as one balancer run — picked, timed, retried whole on a
 * thrown error like any run. A batch that comes back with some records refused settles the rest
 * as written and sends the refused ones again, one by one, in later batches: after a backoff,
 * under the record retry rule (attempts, budget), to the same home when keyed.
 */
import { type AttemptRecord, ConfigError, messageOf, RetriesExhaustedError } from '../errors.js';
import { backoffDelay } from '../health/retry.js';
import type { RunContext } from '../run.js';
import type { Key, ShardState } from '../types.js';
import type { Batch, Carried } from './batch.js';
import type { Ledger } from './ledger.js';
import { deferredVoid } from './ledger.js';
import type { ResolvedRecordRetry } from './options.js';
import { RecordBudget } from './record-budget.js';
import type { BatchResult, BatchSendResult, RecordFailure, RunnerLike } from './types.js';

/** Sends one batch on the shard the balancer chose. */
export type BatchSender<T, Rec> = (
  shard: ShardState<T>,
  batch: Batch<Rec>,
  ctx: RunContext,
) => Promise<BatchSendResult>;

export interface BatchRunnerHost<T, Rec> {
  readonly runner: RunnerLike<T>;
  readonly ledger: Ledger<Rec>;
  readonly send: BatchSender<T, Rec>;
  readonly idempotent: boolean;
  readonly retry: ResolvedRecordRetry | false;
  /** The option path errors name (`ingest`, `http.ingest` …). */
  readonly field: string;
  /** Places a record in an open batch again (a retry, or a record whose home moved), with its encoding. */
  place(
    record: Rec,
    key: Key | undefined,
    size: number,
    carried: Carried | undefined,
    encoded: Uint8Array | undefined,
  ): void;
}

/** What an attempt that sent its batch hands to settlement. */
interface Sent {
  shardId: string;
  attempt: number;
  failed: readonly RecordFailure[] | undefined;
}

/** An attempt found nothing left to send (every record failed or moved home before it). */
const NOTHING_SENT: Sent = { shardId: '', attempt: 0, failed: undefined };

export class BatchRunner<T, Rec> {
  readonly #host: BatchRunnerHost<T, Rec>;
  readonly #budget: RecordBudget | undefined;
  readonly #fifo: Batch<Rec>[] = [];
  /** Batches handed to the balancer and not settled. */
  #submitted = 0;
  #readyAsked = false;
  #readyKnown = false;
  #pumped: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(host: BatchRunnerHost<T, Rec>) {
    this.#host = host;
    const retry = host.retry;
    this.#budget =
      retry === false || retry.budget === false
        ? undefined
        : new RecordBudget(retry.budget, host.runner.clock);
  }

  /** Closed batches not yet handed to the balancer. */
  get waiting(): number {
    return this.#fifo.length;
  }

  /** A batch closed: run it when the balancer is ready. */
  ship(batch: Batch<Rec>): void {
    if (batch.count === 0) return;
    this.#fifo.push(batch);
    this.#pump();
  }

  /** Resolves when every closed batch has been handed to the balancer. */
  pumped(): Promise<void> {
    if (this.#fifo.length === 0) return Promise.resolve();
    this.#pumped ??= deferredVoid();
    return this.#pumped.promise;
  }

  /**
   * Hands closed batches to the balancer in order, each once `ready()` says its queue has room
   * and while fewer than twice its capacity (the sum of its shards' in-flight limits) of them are
   * waiting or running: enough to keep every slot busy, and no more — records are not encoded
   * far ahead of the shards (fewer live records, less work for the garbage collector).
   */
  #pump(): void {
    const fifo = this.#fifo;
    while (fifo.length > 0) {
      if (!this.#readyKnown) {
        if (!this.#readyAsked) {
          this.#readyAsked = true;
          this.#host.runner.ready().then(() => {
            this.#readyAsked = false;
            this.#readyKnown = true;
            this.#pump();
          });
        }
        return;
      }
      if (this.#submitted >= this.#capacity() + this.#host.runner.shards.length) return; // a settlement pumps again
      this.#readyKnown = false;
      this.#submitted++;
      this.#start(fifo.shift()!);
    }
    const pumped = this.#pumped;
    if (pumped !== undefined) {
      this.#pumped = undefined;
      pumped.resolve();
    }
  }

  /** Runs the balancer can have in flight now: the sum of its shards' limits (at least 1). */
  #capacity(): number {
    let capacity = 0;
    for (const shard of this.#host.runner.shards) capacity += shard.limit;
    return Math.max(capacity, 1);
  }

  /** A batch handed to the balancer settled: room for the next. */
  #done(): void {
    this.#submitted--;
    if (this.#fifo.length > 0) this.#pump();
  }

  #start(batch: Batch<Rec>): void {
    const { runner, idempotent } = this.#host;
    runner
      .run((shard, ctx) => this.#attempt(batch, shard, ctx), {
        key: batch.key,
        bytes: batch.bytes,
        idempotent,
      })
      .then(
        (sent) => {
          this.#done();
          this.#settle(batch, sent);
        },
        (error: unknown) => {
          this.#done();
          this.#failAll(batch, error);
        },
      );
  }

  /** One attempt: drop records past their attempts, move those whose home moved, send the rest. */
  async #attempt(batch: Batch<Rec>, shard: ShardState<T>, ctx: RunContext): Promise<Sent> {
    const host = this.#host;
    const attempt = ctx.attempt;
    if (batch.carried !== undefined || attempt > 1) this.#dropExhausted(batch, attempt);
    if (batch.home !== undefined && batch.members !== host.runner.shards) {
      this.#rehome(batch, attempt);
    }
    const count = batch.count;
    if (count === 0) return NOTHING_SENT;
    const carried = batch.carriedCount;
    if (attempt > 1) host.ledger.retried(count);
    else {
      host.ledger.retried(carried);
      this.#budget?.deposit(count - carried);
    }
    host.ledger.sent();
    // Every send is in the batch's log: one that threw, and one the balancer ended (a timeout,
    // an abort) while it was still pending — it counts as an attempt all the same.
    let logged = false;
    const log = (error: unknown): void => {
      logged = true;
      const record = {
        shardId: shard.id,
        error,
        elapsedMs: host.runner.clock.now() - batch.openedAtMs,
      };
      if (batch.log === undefined) batch.log = [record];
      else batch.log.push(record);
    };
    const unlisten = ctx.onAbort(log);
    let result: BatchSendResult;
    try {
      result = await host.send(shard, batch, ctx);
    } catch (error) {
      if (!logged) log(error);
      throw error;
    } finally {
      unlisten();
    }
    return { shardId: shard.id, attempt, failed: failuresOf(host.field, result, count) };
  }

  /** Records whose sends, with this attempt, would pass the record retry rule's attempts fail now. */
  #dropExhausted(batch: Batch<Rec>, attempt: number): void {
    const retry = this.#host.retry;
    if (retry === false) return;
    const max = retry.attempts;
    const carried = batch.carried;
    const exhausted = (i: number) => (carried?.[i]?.attempts ?? 0) + attempt > max;
    let any = false;
    for (let i = 0; i < batch.count && !any; i++) any = exhausted(i);
    if (!any) return;
    const failing: number[] = [];
    for (let i = 0; i < batch.count; i++) if (exhausted(i)) failing.push(i);
    const records = failing.map((i) => batch.recordAt(i));
    const sizes = batch.sizes;
    const history = failing.map((i) => [...(carried?.[i]?.history ?? []), ...(batch.log ?? [])]);
    batch.retain((i) => !exhausted(i));
    failing.forEach((i, j) => {
      this.#host.ledger.fail(
        records[j]!,
        new RetriesExhaustedError(history[j]!, `all ${max} attempts failed`),
        sizes[i]!,
      );
    });
  }

  /**
   * The membership changed since the batch's homes were computed: records whose key now lives on
   * another shard than the batch's key leave it for a batch of their new home. The move counts
   * no send, but the batch's earlier sends (this is its `attempt`) go with each record.
   */
  #rehome(batch: Batch<Rec>, attempt: number): void {
    const { runner } = this.#host;
    batch.members = runner.shards;
    const target = runner.homeOf(batch.key!);
    const keys = batch.keys!;
    const moving: number[] = [];
    for (let i = 0; i < batch.count; i++) {
      if (runner.homeOf(keys[i]!) !== target) moving.push(i);
    }
    if (moving.length === 0) return;
    const { records, sizes, carried } = batch;
    // Copies of their encodings first: `retain` writes the batch's body anew.
    const encoded = moving.map((i) => copyOf(batch.encodedAt(i)));
    const leaving = new Set(moving);
    batch.retain((i) => !leaving.has(i));
    const log = batch.log ?? [];
    moving.forEach((i, j) => {
      const before = carried?.[i];
      const sends: Carried | undefined =
        attempt === 1
          ? before
          : {
              attempts: (before?.attempts ?? 0) + attempt - 1,
              history: [...(before?.history ?? []), ...log],
            };
      this.#host.place(records[i]!, keys[i], sizes[i]!, sends, encoded[j]);
    });
  }

  /** The batch was sent: its records are written, but those the shard refused. */
  #settle(batch: Batch<Rec>, sent: Sent): void {
    if (sent === NOTHING_SENT) return;
    const { ledger } = this.#host;
    const failed = sent.failed;
    if (failed === undefined || failed.length === 0) {
      ledger.wrote(batch.count, batch.bytes, sent.shardId);
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
    }
    ledger.wrote(count, bytes, sent.shardId);
    this.#retryRefused(batch, sent, refused);
  }

  /** Each refused record: failed for good, or carried into a later batch after a backoff. */
  #retryRefused(batch: Batch<Rec>, sent: Sent, refused: Map<number, RecordFailure>): void {
    const { ledger, runner, retry } = this.#host;
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
      const size = batch.sizes[i]!;
      if (failure.retryable === false || retry === false) {
        const reason = retry === false ? 'retries are off' : 'the error is not retryable';
        ledger.fail(
          batch.recordAt(i),
          history.length > 1 ? new RetriesExhaustedError(history, reason) : error,
          size,
        );
      } else if (attempts >= retry.attempts) {
        ledger.fail(
          batch.recordAt(i),
          new RetriesExhaustedError(history, `all ${retry.attempts} attempts failed`),
          size,
        );
      } else if (this.#budget !== undefined && !this.#budget.tryWithdraw()) {
        ledger.fail(
          batch.recordAt(i),
          new RetriesExhaustedError(history, 'the retry budget is exhausted'),
          size,
        );
      } else {
        again.push(i);
        carriedAgain.push({ attempts, history });
        if (attempts > deepest) deepest = attempts;
      }
    }
    if (again.length === 0 || retry === false) return;
    // Only what the refused records need is held through the backoff: not the batch's arrays
    // (with every written record in them), and not its body for a few refused lines — their
    // bytes are copied unless all of it is refused (the batch is done with, so a view stays valid).
    const { records, sizes, keys } = batch;
    const whole = again.length === batch.count;
    const held = again.map((i, j) => ({
      record: records[i]!,
      key: keys?.[i],
      size: sizes[i]!,
      carried: carriedAgain[j],
      encoded: whole ? batch.encodedAt(i) : copyOf(batch.encodedAt(i)),
    }));
    const delayMs = backoffDelay(deepest, retry.baseMs, retry.maxMs, runner.random);
    runner.clock.setTimer(() => {
      for (const r of held) this.#host.place(r.record, r.key, r.size, r.carried, r.encoded);
    }, delayMs);
  }

  /** The batch's run failed (after the balancer's retries): every record in it fails with it. */
  #failAll(batch: Batch<Rec>, error: unknown): void {
    const { ledger } = this.#host;
    const carried = batch.carried;
    for (let i = 0; i < batch.count; i++) {
      const before = carried?.[i];
      ledger.fail(
        batch.recordAt(i),
        before === undefined
          ? error
          : new RetriesExhaustedError(
              [...before.history, ...(batch.log ?? [])],
              `its last batch failed: ${messageOf(error)}`,
            ),
        batch.sizes[i]!,
      );
    }
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
  const failed = (result as BatchResult).failed;
  if (failed === undefined) return undefined;
  return checkFailures(`${field}.send() result.failed`, failed, count);
}

/**
 * `failed`, checked as a list of a batch's refused records (`[{ index, error?, retryable? }]`
 * over `count` records); `at` names it as the caller wrote it.
 */
export function checkFailures(
  at: string,
  failed: unknown,
  count: number,
): readonly RecordFailure[] {
  if (!Array.isArray(failed)) {
    throw new ConfigError(at, 'must be an array of { index, error?, retryable? }', failed);
  }
  const seen = new Uint8Array(count);
  for (let j = 0; j < failed.length; j++) {
    const f = failed[j] as RecordFailure | undefined;
    if (typeof f !== 'object' || f === null) {
      throw new ConfigError(`${at}[${j}]`, 'must be an object { index, error?, retryable? }', f);
    }
    const index = f.index;
    if (!Number.isInteger(index) || index < 0 || index >= count) {
      throw new ConfigError(
        `${at}[${j}].index`,
        `must be an integer from 0 to ${count - 1} (a position in the batch's records)`,
        index,
      );
    }
    if (seen[index] === 1) {
      throw new ConfigError(`${at}[${j}].index`, 'must not repeat an index listed before', index);
    }
    seen[index] = 1;
    if (f.retryable !== undefined && typeof f.retryable !== 'boolean') {
      throw new ConfigError(`${at}[${j}].retryable`, 'must be a boolean', f.retryable);
    }
  }
  return failed;
}
