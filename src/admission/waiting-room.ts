/**
 * Where admitted runs wait for a slot: the queue (first come, first served; retries at its
 * front) and strict affinity's per-home lines. It keeps the figures backpressure reads — runs
 * waiting for their first attempt (`queued`, what `maxQueued` and `ready()` bound) and admitted
 * runs waiting to retry — so a producer that awaits `ready()` never sees more than `maxQueued`
 * queued, retries or not.
 */
import type { EventEmitter } from 'eventemitter3';
import { QueueFullError } from '../base/errors.js';
import type { BalancerEvents } from '../base/events.js';
import type { Shard } from '../load/shard.js';
import { HomeLines, type HomeLinesHost } from './home-lines.js';
import { RunQueue } from './queue.js';
import type { Run } from './run.js';

const RESOLVED = Promise.resolve();

/**
 * How many times `maxQueued` may wait at most, whatever `overflow` says: a producer that never
 * awaits `ready()` gets `QueueFullError` past it instead of running out of memory.
 */
export const QUEUE_CEILING_FACTOR = 10;

export class WaitingRoom<T> {
  readonly queue = new RunQueue<Run<T>>();
  readonly lines: HomeLines<T>;
  /** Runs waiting for their first attempt. */
  queued = 0;
  /** Admitted runs between a failed attempt and the next one (backing off, or waiting). */
  retrying = 0;
  /** The hard ceiling on `queued`: {@link QUEUE_CEILING_FACTOR} × `maxQueued`. */
  readonly ceiling: number;
  #readyWait: { promise: Promise<void>; resolve: () => void } | undefined;
  /** Retries in backoff only because every shard they may use pushes back (a new one may not). */
  readonly #held = new Set<Run<T>>();
  /** The queue reached `maxQueued` (`saturated` emitted) and has not fallen below it since. */
  #saturated = false;

  private readonly maxQueued: number;
  private readonly reject: boolean;

  constructor(
    options: { maxQueued: number; overflow: 'wait' | 'reject' },
    private readonly events: EventEmitter<BalancerEvents>,
    private readonly host: HomeLinesHost<T> & {
      pump(): void;
      /** Runs `call` (a listener's event) once the dispatcher's step is done. */
      later(call: () => void): void;
    },
  ) {
    this.lines = new HomeLines<T>(host);
    this.maxQueued = options.maxQueued;
    this.reject = options.overflow === 'reject';
    this.ceiling = options.maxQueued * QUEUE_CEILING_FACTOR;
  }

  /**
   * overflow 'reject' and `maxQueued` runs wait already, or the hard ceiling is reached whatever
   * `overflow` says: a new run that would wait — in the queue or in its home's line alike — is
   * refused with `QueueFullError`; one that can start at once is not.
   */
  get full(): boolean {
    return (this.reject && this.queued >= this.maxQueued) || this.queued >= this.ceiling;
  }

  /** What a run refused because it would wait past {@link full} settles with. */
  fullError(): QueueFullError {
    return this.queued >= this.ceiling
      ? new QueueFullError(this.maxQueued, this.ceiling)
      : new QueueFullError(this.maxQueued);
  }

  /** Counts `run` as waiting (admitted, or failed and to be retried) or not (started, settled). */
  count(run: Run<T>, delta: 1 | -1): void {
    if (run.waiting === delta > 0) return;
    run.waiting = delta > 0;
    if (run.attempt > 0) {
      this.retrying += delta;
      return;
    }
    this.queued += delta;
    // Once per crossing: `ready` (in `shrank`) ends it when the queue falls below again.
    if (delta > 0 && this.queued === this.maxQueued && !this.#saturated) {
      this.#saturated = true;
      if (this.events.listenerCount('saturated') > 0) {
        const event = { queued: this.queued, maxQueued: this.maxQueued };
        this.host.later(() => this.events.emit('saturated', event));
      }
    }
  }

  /** Puts a run in the queue (at the front: a retry, or a run whose home moved). */
  enqueue(run: Run<T>, first: boolean, nowMs: number): void {
    run.wait(nowMs);
    if (first) this.queue.unshift(run);
    else this.queue.push(run);
    this.count(run, 1);
  }

  /**
   * Holds a failed run, counted as retrying, for `delayMs` — its backoff, or (`byPushBack`) the
   * push-back of every shard it may use — then queues it at the front.
   */
  backOff(run: Run<T>, delayMs: number, nowMs: number, byPushBack: boolean): void {
    run.backOff();
    this.count(run, 1);
    if (delayMs <= 0) {
      this.enqueue(run, true, nowMs);
      return;
    }
    if (byPushBack) this.#held.add(run);
    const clock = this.host.clock;
    run.cancelTimer = clock.setTimer(() => {
      run.cancelTimer = undefined;
      this.#held.delete(run);
      if (run.state !== 'backoff') return;
      this.enqueue(run, true, clock.now());
      this.host.pump();
    }, delayMs);
  }

  /** Queues at once the runs held by push-back that `free` lets go (a shard joined). */
  release(nowMs: number, free: (run: Run<T>) => boolean): void {
    for (const run of this.#held) {
      if (!free(run)) continue;
      this.#held.delete(run);
      run.cancelTimer?.();
      run.cancelTimer = undefined;
      this.enqueue(run, true, nowMs);
    }
  }

  /** Puts a strict keyed run in its home's line (a retry at the front). */
  park(run: Run<T>, home: Shard<T>): void {
    if (run.queued) this.queue.remove(run);
    this.lines.park(run, home, run.keyed!.waitReason, run.attempt > 0);
    this.count(run, 1);
  }

  /** Moves every run of the home lines to the queue's front, in order (their homes may move). */
  requeueLines(nowMs: number): void {
    const parked = this.lines.takeAll();
    for (let i = parked.length - 1; i >= 0; i--) this.enqueue(parked[i]!, true, nowMs);
  }

  /** Takes a run out of the waiting room (to start it, or settled): no longer counted. */
  remove(run: Run<T>): void {
    this.#leave(run);
    this.count(run, -1);
  }

  /** Takes a run out of whatever it waits in (a run waits in one list at a time). */
  #leave(run: Run<T>): void {
    if (run.keyed?.waitingAt !== undefined) this.lines.leave(run);
    else if (run.queued) this.queue.remove(run);
    else if (this.#held.size > 0) this.#held.delete(run);
  }

  /** Every waiting run, queue first, each line in order (for a close without drain). */
  everyone(): Run<T>[] {
    const all: Run<T>[] = [];
    for (let run = this.queue.head; run !== undefined; run = run.next as Run<T> | undefined)
      all.push(run);
    for (const shard of this.lines.shards()) {
      for (
        let run = this.lines.head(shard);
        run !== undefined;
        run = run.next as Run<T> | undefined
      )
        all.push(run);
    }
    return all;
  }

  /** Resolves when a new run would not queue past `maxQueued` (at once when `open` is false). */
  ready(open: boolean): Promise<void> {
    if (!open || this.queued < this.maxQueued) return RESOLVED;
    this.#readyWait ??= deferred();
    return this.#readyWait.promise;
  }

  /**
   * The queue may have shrunk: once below `maxQueued` (or for good on close) wakes `ready()`, and
   * emits `ready` after a `saturated` — whether or not anyone awaits `ready()`.
   */
  shrank(closing = false): void {
    if (!closing && this.queued >= this.maxQueued) return;
    const wait = this.#readyWait;
    if (wait !== undefined) {
      this.#readyWait = undefined;
      wait.resolve();
    }
    if (this.#saturated && !closing) {
      this.#saturated = false;
      if (this.events.listenerCount('ready') > 0) this.host.later(() => this.events.emit('ready'));
    }
  }
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
