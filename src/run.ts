/**
 * A run as the balancer keeps it: its options, its state, its current attempt. The types users
 * see (`RunContext`, `RunFn`, `RunOptions`) are declared here too, below the balancer that uses
 * them.
 */
import type { AttemptRecord } from './errors.js';
import type { QueueNode } from './queue.js';
import type { CompiledRequirement, Requirement } from './routing/requirement.js';
import type { Shard } from './shard.js';
import type { Key, ShardState } from './types.js';

/** What a run's function receives besides the shard. */
export interface RunContext {
  /** Aborted when the attempt times out, the caller's signal aborts, or the balancer closes without drain. */
  signal: AbortSignal;
  /** 1 for the first try. */
  attempt: number;
  /**
   * Calls `listener` once if the attempt is aborted, without creating an `AbortSignal` (a signal
   * listener costs a transport 15–20 µs a call on Node 20). One listener per attempt.
   */
  onAbort(listener: (reason: unknown) => void): void;
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

/** Why an attempt went where it went (see the `route` event). */
export type RouteReason = 'direct' | 'preferred' | 'spill:saturated' | 'spill:unhealthy';

export type RunState = 'queued' | 'running' | 'backoff' | 'settled';

/**
 * What `fn` receives. The `AbortController` behind `signal` is made only when `fn` reads the
 * signal: most calls never abort, and a controller per attempt was a third of `run()`'s cost.
 */
export class AttemptContext implements RunContext {
  #controller: AbortController | undefined;
  #reason: unknown;
  #aborted = false;
  #listener: ((reason: unknown) => void) | undefined;

  constructor(readonly attempt: number) {}

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  onAbort(listener: (reason: unknown) => void): void {
    if (this.#aborted) listener(this.#reason);
    else this.#listener = listener;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.(reason);
  }
}

/** One admitted run. A class so every run has the same shape (one hidden class on the hot path). */
export class Run<T> implements QueueNode {
  prev: QueueNode | undefined = undefined;
  next: QueueNode | undefined = undefined;
  queued = false;
  state: RunState = 'queued';
  attempt = 0;
  /** Bumped when an attempt ends, so a late settlement of an old attempt is ignored. */
  token = 0;
  shard: Shard<T> | undefined = undefined;
  ctx: AttemptContext | undefined = undefined;
  cancelTimer: (() => void) | undefined = undefined;
  attemptStartMs = 0;
  tried: Shard<T>[] | undefined = undefined;
  records: AttemptRecord[] | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;
  /** When the run last entered the queue (for `spillAfterMs`). */
  queuedAtMs = 0;
  /** The tier and reason of the pending pick (set by the candidate search). */
  tier = -1;
  reason: RouteReason = 'direct';

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
