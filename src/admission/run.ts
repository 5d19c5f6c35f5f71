/**
 * A run as the balancer keeps it: its options, its state, its current attempt. The types users
 * see (`RunContext`, `RunFn`, `RunOptions`) are declared here too, below the balancer that uses
 * them.
 */
import { rethrowLater } from '../base/callbacks.js';
import type { AttemptRecord } from '../base/errors.js';
import type { RouteReason } from '../base/events.js';
import type { CompiledRequirement, Key, Requirement, ShardState } from '../base/types.js';
import type { Shard } from '../load/shard.js';
import type { DisplacementReason } from '../load/stats.js';
import type { TransitLedger } from '../load/transit.js';
import type { ResolvedRetryOptions, RetryOptions } from '../retry/options.js';
import type { QueueNode } from './queue.js';

/** What a run's function receives besides the shard. */
export interface RunContext {
  /** Aborted when the attempt times out or fails, the caller's signal aborts, or the balancer closes without drain. */
  signal: AbortSignal;
  /** 1 for the first try. */
  attempt: number;
  /**
   * Calls `listener` once when the attempt is over before the call that registered it finished
   * (timeout, abort, close, or the attempt settled with this call still running), without
   * creating an `AbortSignal` (a signal listener costs a transport 15–20 µs a call on Node 20).
   * Every listener is kept; the returned function removes this one (call it when your call ends).
   */
  onAbort(listener: (reason: unknown) => void): () => void;
  /**
   * The batch's id, for a batch `send` of an ingestion (see `BatchContext`): the same for every
   * send of the same records. Undefined for other runs.
   */
  readonly batchId?: string | undefined;
  /**
   * Reports a request body this attempt sent: `rawBytes` before compression, `wireBytes` as sent,
   * and the `encoding` of those bytes (`gzip`, `zstd`, `br`; omitted: `identity`). Counted in the
   * transit ledger (`stats().bytes`, per shard, tier and `transitLabel` value) and announced as a
   * `transit` event. Call it once per body sent; the HTTP transport's calls report their own.
   *
   * @example
   * const body = await gzip.compress(batch);
   * await post(shard.target, body.body, signal);
   * ctx.reportSent(body.rawBytes, body.wireBytes, body.encoding);
   */
  reportSent(rawBytes: number, wireBytes: number, encoding?: string): void;
  /**
   * Reports a response body this attempt received, `bytes` as they came (`encoding`: the
   * response's content-encoding, if any).
   *
   * @example
   * const reply = await res.arrayBuffer();
   * ctx.reportReceived(reply.byteLength);
   */
  reportReceived(bytes: number, encoding?: string): void;
}

/** The work of a run: talk to `shard.target`, honour `ctx.signal`. */
export type RunFn<T, R> = (shard: ShardState<T>, ctx: RunContext) => Promise<R>;

/** Per-run options. */
export interface RunOptions {
  /** Routing key for hashing pickers (string or bytes). */
  key?: Key;
  /** Aborts the whole run: a queued run leaves the queue, a running one sees `ctx.signal` abort. */
  signal?: AbortSignal;
  /** Bound on one attempt, ms (overrides the balancer's). */
  timeoutMs?: number;
  /**
   * Bound on how long the run may wait in all, ms from its admission — for push-back, for a keyed
   * run's unavailable home, for a home it cannot reach (overrides the balancer's, default 120 000).
   */
  deliveryTimeoutMs?: number;
  /**
   * This run's retries, overriding the balancer's `retry` (`false`: one attempt). Resolved once
   * per object: pass the same object to many runs, and a changed copy to change it. Its `budget`
   * may only be `false`: the retry budget is the balancer's.
   */
  retry?: RetryOptions | false;
  /** The call may be repeated safely: failed attempts are retried on other shards (default false). */
  idempotent?: boolean;
  /** Bytes this run carries, counted in the shard's `bytesInFlight` (default 0). */
  bytes?: number;
  /**
   * A hard routing rule: only shards whose labels satisfy it are ever tried (`{ region: 'eu' }`,
   * or a list of allowed values). It wins over the balancer's `policy`.
   */
  require?: Requirement;
  /** What the balancer's `policy` derives this run's rule from (a record, a tenant …). */
  meta?: unknown;
}

/**
 * queued → running → settled, or running → backoff → queued … A `running` run holds a slot; its
 * attempt is live while its `ctx` is set.
 */
export type RunState = 'queued' | 'running' | 'backoff' | 'settled';

/** Why a strict keyed run waits at its home shard. */
export type HomeWait = 'capped' | 'ejected' | 'pushback';

/**
 * What `fn` receives. The `AbortController` behind `signal` is made only when `fn` reads the
 * signal: most calls never abort, and a controller per attempt was a third of `run()`'s cost.
 */
export class AttemptContext implements RunContext {
  #controller: AbortController | undefined;
  #reason: unknown;
  #aborted = false;
  /** The first listener in a field, the rest in a list: one call per attempt is the common case. */
  #listener: ((reason: unknown) => void) | undefined;
  #more: ((reason: unknown) => void)[] | undefined;
  /** Set by an ingestion before it sends a batch (see `RunContext.batchId`). */
  batchId: string | undefined = undefined;
  /** Where reported bytes are counted, and for which shard and tier (none outside a balancer). */
  readonly #ledger: TransitLedger | undefined;
  readonly #shard: Shard<unknown> | undefined;
  readonly #tier: number;

  constructor(
    readonly attempt: number,
    ledger?: TransitLedger,
    shard?: Shard<unknown>,
    tier = -1,
  ) {
    this.#ledger = ledger;
    this.#shard = shard;
    this.#tier = tier;
  }

  // Counted even after the attempt ended: the bytes did travel (a body sent before a timeout).
  reportSent(rawBytes: number, wireBytes: number, encoding?: string): void {
    this.#ledger?.sent(this.#shard!, this.#tier, this.attempt, rawBytes, wireBytes, encoding);
  }

  reportReceived(bytes: number, encoding?: string): void {
    this.#ledger?.received(this.#shard!, this.#tier, this.attempt, bytes, encoding);
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    if (this.#aborted) {
      listener(this.#reason);
      return noop;
    }
    if (this.#listener === undefined) this.#listener = listener;
    else if (this.#more === undefined) this.#more = [listener];
    else this.#more.push(listener);
    return () => this.#remove(listener);
  }

  /** Someone may hear its end: its signal was made, or a listener registered. */
  get heard(): boolean {
    return this.#controller !== undefined || this.#listener !== undefined;
  }

  /** Aborts the signal (if made) and calls every listener still registered. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#fire(reason);
  }

  /**
   * The attempt succeeded: calls still running from it are stopped through their listeners, but
   * the signal is left alone (a value the run returns may still be read through it, such as a
   * fetch `Response` body).
   */
  finish(reason: () => unknown): void {
    if (this.#aborted || this.#listener === undefined) return;
    this.#aborted = true;
    this.#reason = reason();
    this.#fire(this.#reason);
  }

  #fire(reason: unknown): void {
    const first = this.#listener;
    const more = this.#more;
    this.#listener = undefined;
    this.#more = undefined;
    if (first !== undefined) call(first, reason);
    if (more !== undefined) for (const listener of more) call(listener, reason);
  }

  #remove(listener: (reason: unknown) => void): void {
    if (this.#listener === listener) {
      this.#listener = this.#more?.shift();
      return;
    }
    const more = this.#more;
    const i = more === undefined ? -1 : more.indexOf(listener);
    if (i >= 0) more!.splice(i, 1);
  }
}

/**
 * What a keyed run keeps about its key's home: made only for keyed runs, so an unkeyed run (the
 * common case) carries none of it.
 */
export class KeyedState<T> {
  /** The key's home shard, for the membership version `version`. */
  home: Shard<T> | undefined = undefined;
  version = -1;
  /** Why the pending attempt does not run on its home (spill affinity), if it does not. */
  displaced: DisplacementReason | undefined = undefined;
  /** Strict affinity: the shard whose wait line holds the run, and why. */
  waitingAt: Shard<T> | undefined = undefined;
  waitReason: HomeWait = 'capped';
  /** Cancels the delivery deadline of a wait for an ejected or pushed-back home. */
  cancelWait: (() => void) | undefined = undefined;
  /** When this attempt's wait at its home began (−1: not waiting). */
  waitSinceMs = -1;
}

/**
 * One admitted run. A class so every run has the same shape (one hidden class on the hot path).
 * Its state changes only through its transitions below (`wait`, `start`, `end`, `backOff`,
 * `settle`); routing writes its notes of the pending pick (`tier`, `reason`, `keyed`), the retry
 * policy its counts (`owed`, `free`, `records`, `tried`).
 */
export class Run<T> implements QueueNode {
  prev: QueueNode | undefined = undefined;
  next: QueueNode | undefined = undefined;
  queued = false;
  state: RunState = 'queued';
  /** Counted in the balancer's waiting figures (queued for a first attempt, or retrying). */
  waiting = false;
  attempt = 0;
  /** Attempts the balancer ended itself (shard removed without drain): not counted against `retry.attempts`. */
  owed = 0;
  /**
   * Attempts that spent none of `retry.attempts`: owed ones, push-back, and a strict keyed run's
   * attempts that never reached its home (connection refused) — waits bounded by `deadlineMs`.
   */
  free = 0;
  /** Balancer-clock time past which the run waits no more (admission + `deliveryTimeoutMs`). */
  deadlineMs = Number.POSITIVE_INFINITY;
  /** The run's own retry rule (`run(fn, { retry })`); undefined: the balancer's. */
  retry: ResolvedRetryOptions | false | undefined = undefined;
  /** The current attempt is its shard's probe (the shard was probing when it started). */
  probe = false;
  shard: Shard<T> | undefined = undefined;
  /**
   * The live attempt's context, and its identity: the answer, timeout or abort of an attempt
   * whose context is no longer this one finds nothing to end.
   */
  ctx: AttemptContext | undefined = undefined;
  cancelTimer: (() => void) | undefined = undefined;
  attemptStartMs = 0;
  tried: Shard<T>[] | undefined = undefined;
  records: AttemptRecord[] | undefined = undefined;
  /** When the run last entered the queue (for `spillAfterMs`). */
  queuedAtMs = 0;
  /** The tier and reason of the pending pick (set by routing). */
  tier = -1;
  reason: RouteReason = 'direct';
  /** Keyed runs under a keyed picker: their home and their waits (made at the first route). */
  keyed: KeyedState<T> | undefined = undefined;

  // ——— transitions: the only writes of `state` ———

  /** It waits for a slot: in the queue (from `nowMs`) or, `nowMs` undefined, in its home's line. */
  wait(nowMs?: number): void {
    this.state = 'queued';
    if (nowMs !== undefined) this.queuedAtMs = nowMs;
  }

  /** An attempt starts on `shard` (as its probe when `probe`), its bytes counted in `ledger`. */
  start(shard: Shard<T>, probe: boolean, nowMs: number, ledger: TransitLedger): AttemptContext {
    this.state = 'running';
    this.shard = shard;
    this.probe = probe;
    this.attemptStartMs = nowMs;
    const ctx = new AttemptContext(++this.attempt, ledger, shard, this.tier);
    this.ctx = ctx;
    return ctx;
  }

  /**
   * Its attempt is over (answered, timed out, aborted): the context and the timer go, and the run
   * holds its slot until the dispatcher frees it and settles it or backs it off.
   */
  end(): AttemptContext {
    const ctx = this.ctx!;
    this.ctx = undefined;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    return ctx;
  }

  /** It waits for its next attempt (a timer the waiting room set). */
  backOff(): void {
    this.state = 'backoff';
    this.shard = undefined;
  }

  /** It settles (the dispatcher settles a run once: it checks `state` first). */
  settle(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.state = 'settled';
    this.shard = undefined;
  }

  constructor(
    readonly fn: RunFn<T, unknown>,
    readonly key: Key | undefined,
    readonly signal: AbortSignal | undefined,
    readonly timeoutMs: number,
    readonly idempotent: boolean,
    readonly bytes: number,
    readonly requirement: CompiledRequirement | undefined,
    readonly admittedMs: number,
    readonly resolve: (value: unknown) => void,
    readonly reject: (error: unknown) => void,
  ) {}
}

function noop(): void {}

/** One `onAbort` listener: a throw is the caller's bug, thrown again on its own turn. */
function call(listener: (reason: unknown) => void, reason: unknown): void {
  try {
    listener(reason);
  } catch (error) {
    rethrowLater(error);
  }
}

/** The reason calls still running from an attempt that ended are stopped with. */
export function attemptOver(): Error {
  const error = new Error('the attempt ended before this call finished');
  error.name = 'AbortError';
  return error;
}
