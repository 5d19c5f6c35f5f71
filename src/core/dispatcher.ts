/**
 * The life of a run: admission (or a wait, with backpressure), the queue pump, the start and end
 * of each attempt, retries after their backoff, and settlement — exactly once. Where an attempt
 * goes is routing's answer (`routing/`), what it teaches is feedback's (`feedback.ts`), whether
 * it is retried is the retry policy's (`retry-policy.ts`); this file carries them out.
 */
import type { EventEmitter } from 'eventemitter3';
import {
  type AttemptContext,
  attemptOver,
  Run,
  type RunFn,
  type RunOptions,
} from '../admission/run.js';
import { readRunOptions, ruleOf, runSettings } from '../admission/run-options.js';
import { SignalWatch } from '../admission/signals.js';
import { deferred, WaitingRoom } from '../admission/waiting-room.js';
import {
  BalancerClosedError,
  ConfigError,
  PushBackError,
  ShardUnavailableError,
  TimeoutError,
} from '../base/errors.js';
import type { BalancerEvents } from '../base/events.js';
import type { Clock, RandomSource } from '../base/types.js';
import type { AttemptChanges, Feedback } from '../load/feedback.js';
import { Shard } from '../load/shard.js';
import type { Figures } from '../load/stats.js';
import type { RetryBudget } from '../retry/budget.js';
import type { ResolvedRetryOptions } from '../retry/options.js';
import { decideRunRetry, finalError, noteFailure, pushBackWait } from '../retry/policy.js';
import type { Availability } from '../routing/availability.js';
import type { CandidateSet } from '../routing/candidates.js';
import type { CompiledRequirement, Requirement } from '../routing/requirement.js';
import { PARK, type Route, type Router, WAIT } from '../routing/router.js';
import { announceAttempt } from './announce.js';
import type { Membership } from './membership.js';
import type { ResolvedOptions } from './options.js';

/** Runs with rules the queue scan may step over to find one that fits. */
const MAX_SKIPPED = 64;
const RESOLVED = Promise.resolve();

/** The rooms a dispatcher works with (the balancer builds them). */
export interface DispatcherParts<T> {
  events: EventEmitter<BalancerEvents>;
  clock: Clock;
  random: RandomSource;
  options: ResolvedOptions;
  membership: Membership<T, never>;
  candidates: CandidateSet<T>;
  router: Router<T>;
  feedback: Feedback<T>;
  retry: ResolvedRetryOptions | false;
  budget: RetryBudget | undefined;
  figures: Figures;
  policy: ((meta: unknown) => Requirement | undefined) | undefined;
  /** Lets one probe through to ejected `shard` now: keyed runs wait for it (health/). */
  probeEarly(shard: Shard<T>): void;
  /**
   * Acts on what an ended attempt changed (events, shared limits, routing's push-back, health's
   * availability), once the attempt's step is done; true when every waiting line may go now.
   */
  changed(shard: Shard<T>, changes: AttemptChanges): boolean;
}

export class Dispatcher<T> {
  readonly #parts: DispatcherParts<T>;
  readonly #events: EventEmitter<BalancerEvents>;
  readonly #clock: Clock;
  readonly #options: ResolvedOptions;
  readonly #candidates: CandidateSet<T>;
  /** Who may take work (the candidate set's room), where every attempt takes and frees its slot. */
  readonly #availability: Availability<T>;
  readonly #waiting: WaitingRoom<T>;
  readonly #signals = new SignalWatch<Run<T>>((run, reason) => this.#abortRun(run, reason));
  /** Runs that started an attempt and have not settled (running or backing off). */
  readonly #active = new Set<Run<T>>();
  readonly #settings = runSettings();
  #inFlight = 0;
  #pending = 0;
  /**
   * The user code a step reached, run once the step is done ({@link #flush}), in pairs: a started
   * run and its attempt's context (its `pick` and `route` listeners, then its `fn`), or a call and
   * `undefined` (event listeners, an ended attempt's `ctx.signal` listeners). Whatever that code
   * does — an abort, a close, a membership change, a run — finds the dispatcher between steps.
   */
  readonly #after: (Run<T> | (() => void) | AttemptContext | undefined)[] = [];
  /** The next pair to run, and the end of those queued (the array is reused, never shrunk). */
  #afterNext = 0;
  #afterEnd = 0;
  /** Why every run still running stops (a close without drain, or its timeout); set once. */
  #stopAll: BalancerClosedError | undefined;
  #closed = false;
  #drainWait: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(parts: DispatcherParts<T>) {
    this.#parts = parts;
    this.#events = parts.events;
    this.#clock = parts.clock;
    this.#options = parts.options;
    this.#candidates = parts.candidates;
    this.#availability = parts.candidates.availability;
    this.#waiting = new WaitingRoom<T>(parts.options, parts.events, {
      clock: parts.clock,
      expired: (run, waitedMs) => {
        const { waitingAt, waitReason } = run.keyed!;
        const error = new ShardUnavailableError(
          waitingAt!.id,
          waitedMs,
          waitReason,
          run.deadlineMs - run.admittedMs,
        );
        this.#settle(run, false, error);
        this.#waiting.shrank();
        this.#flush();
      },
      serve: (shard) => {
        this.#serve(shard);
        this.#flush();
      },
      pump: () => {
        this.#pump();
        this.#flush();
      },
      probeEarly: (shard) => parts.probeEarly(shard),
      later: (call) => this.#later(call),
    });
  }

  /** The live figures `stats()` adds to the counters. */
  get inFlight(): number {
    return this.#inFlight;
  }
  get queued(): number {
    return this.#waiting.queued;
  }
  get retrying(): number {
    return this.#waiting.retrying;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /** Ends every running attempt on a shard removed without drain. */
  abortAttempts(shard: Shard<T>, error: unknown): void {
    for (const run of [...this.#active]) {
      if (run.shard === shard && run.ctx !== undefined)
        this.#endAttempt(run, run.ctx, false, error, true);
    }
  }

  /**
   * The membership changed: keys may have new homes, so waiting keyed runs are routed again, and
   * a retry held only by push-back goes now if a shard it may use (a new one) does not push back.
   */
  membershipChanged(): void {
    const now = this.#clock.now();
    this.#waiting.requeueLines(now);
    this.#waiting.release(now, (run) => this.#pushBackWait(run, now) === 0);
    this.wake();
  }

  /** A shard was ejected or pushes back: keyed runs waiting for it wait against their deadline. */
  unavailable(shard: Shard<T>, why: 'ejected' | 'pushback'): void {
    this.#waiting.lines.unavailable(shard, why);
  }

  /** Health, membership or a timer changed what may be offered: every line, then the queue. */
  wake(): void {
    const lines = this.#waiting.lines;
    if (lines.size > 0) for (const shard of lines.shards()) this.#serve(shard);
    this.#pump();
    this.#flush();
  }

  /** Runs `fn` on a shard the picker chooses, when a slot is free (see `Balancer.run`). */
  run<R>(fn: RunFn<T, R>, options?: RunOptions): Promise<R> {
    if (typeof fn !== 'function')
      return this.refuse(new ConfigError('fn', 'must be a function', fn));
    const o = this.#settings;
    let rule: CompiledRequirement | undefined;
    try {
      readRunOptions(options, this.#options, o);
    } catch (error) {
      return this.refuse(error);
    }
    // Read before any user code (a policy) could start another run and reuse the settings.
    const { key, signal, timeoutMs, deliveryTimeoutMs, idempotent, bytes, require, meta, retry } =
      o;
    try {
      rule = ruleOf(require, meta, this.#parts.policy, this.#candidates);
    } catch (error) {
      return this.refuse(error);
    }
    if (this.#closed) return this.refuse(new BalancerClosedError());
    if (signal?.aborted) return this.refuse(signal.reason);
    const waiting = this.#waiting;
    const queueFirst = waiting.queue.size > 0;
    // Runs a rule or a tier holds back may be passed (as `#pump` does); when full, within its scan.
    const passable =
      this.#candidates.tiers !== undefined || waiting.queue.head?.requirement !== undefined;
    const full = waiting.full;
    if (queueFirst && full && !(passable && waiting.queue.size <= MAX_SKIPPED))
      return this.refuse(waiting.fullError());
    // One clock read for admission and the fast path's route (a read costs ~0.1 µs).
    const now = this.#clock.now();
    return new Promise<R>((resolve, reject) => {
      const run = new Run<T>(
        fn as RunFn<T, unknown>,
        key,
        signal,
        timeoutMs,
        idempotent,
        bytes,
        rule,
        now,
        resolve as (value: unknown) => void,
        reject,
      );
      run.deadlineMs = now + deliveryTimeoutMs;
      run.retry = retry;
      this.#pending++;
      // Admitted runs fund retries; while the queue is full none do, even one that starts at once.
      if (!full) this.#parts.budget?.deposit(now);
      if (signal !== undefined) this.#signals.add(signal, run);
      // Fast path: nothing waits ahead (when full, those that can start go first, in order).
      if (queueFirst && full) this.#pump();
      if ((!queueFirst || full) && this.#inFlight < this.#options.maxInFlight) {
        // Nothing is left for a flush (run() is not inside one with more to run, no pump queued
        // any): the step is this start alone, and its user code may run at once.
        if (this.#route(run, now, full, this.#afterEnd === 0)) {
          if (this.#afterEnd > 0) this.#flush();
          return;
        }
      }
      if (full) this.#settle(run, false, waiting.fullError(), true);
      else {
        waiting.enqueue(run, false, now);
        // Runs held back by a rule or a tier do not block the others: this one may fit now.
        if (passable) this.#pump();
      }
      if (this.#afterEnd > 0) this.#flush();
    });
  }

  /** Resolves when a new `run` would not queue past `maxQueued` (like a stream's `'drain'`). */
  ready(): Promise<void> {
    return this.#waiting.ready(!this.#closed);
  }

  /**
   * Resolves when every admitted run has settled; with `timeoutMs`, rejects with a `TimeoutError`
   * (naming how many still run) if that takes longer. The runs go on either way.
   */
  drain(timeoutMs = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.#pending === 0) return RESOLVED;
    this.#drainWait ??= deferred();
    const settled = this.#drainWait.promise;
    if (timeoutMs === Number.POSITIVE_INFINITY) return settled;
    return new Promise<void>((resolve, reject) => {
      const cancel = this.#clock.setTimer(() => {
        reject(
          new TimeoutError(
            timeoutMs,
            undefined,
            `drain() waited ${timeoutMs} ms and ${this.#pending} run(s) had not settled: a shard that never answers holds its runs until their timeoutMs (set one) or a close({ drain: false })`,
          ),
        );
      }, timeoutMs);
      settled.then(() => {
        cancel();
        resolve();
      });
    });
  }

  /**
   * Stops admitting; with `drain`, waits for every admitted run (aborting what still runs after
   * `timeoutMs`); without, settles queued runs and aborts running ones.
   */
  async close(drain: boolean, timeoutMs: number): Promise<void> {
    this.#closed = true;
    this.#waiting.shrank(true);
    if (!drain) this.#abortAll('the balancer was closed without drain before this run finished');
    else if (timeoutMs !== Number.POSITIVE_INFINITY && this.#pending > 0) {
      const cancel = this.#clock.setTimer(
        () =>
          this.#abortAll(
            `the balancer's close({ timeoutMs: ${timeoutMs} }) ran out before this run finished`,
          ),
        timeoutMs,
      );
      await this.drain();
      cancel();
    }
    await this.drain();
  }

  // ——— the queue ———

  /**
   * Routes `run`'s next attempt: starts it, parks it in its home's line, or settles it with the
   * routing error (with `full`, a run that would wait is refused) or the abort of its signal (a
   * shared signal aborts runs one by one: one that frees a slot must not start the next).
   */
  #route(run: Run<T>, now: number, full = false, direct = false): boolean {
    if (run.signal?.aborted === true) {
      this.#settle(run, false, run.signal.reason);
      return true;
    }
    const route: Route<T> = this.#parts.router.route(run, now);
    if (full && (route === WAIT || route === PARK)) {
      this.#settle(run, false, this.#waiting.fullError(), true);
      return true;
    }
    if (route === WAIT) return false;
    if (route === PARK) {
      this.#waiting.park(run, run.keyed!.home!);
    } else if (route instanceof Shard) {
      this.#waiting.remove(run);
      this.#start(run, route, now, direct);
    } else {
      this.#settle(run, false, route);
    }
    return true;
  }

  /**
   * Starts queued runs while slots are free, in arrival order. A run that cannot be placed stops
   * the scan — unless it has a rule or waits for a tier, when the runs behind it (which may go
   * elsewhere) are tried too, up to a bounded number.
   */
  #pump(): void {
    let node = this.#waiting.queue.head;
    const now = this.#clock.now();
    let skipped = 0;
    // No user code runs inside the scan (it waits for the flush): `node` stays in the queue.
    while (node !== undefined && this.#inFlight < this.#options.maxInFlight) {
      const run = node;
      node = run.next as Run<T> | undefined;
      if (this.#route(run, now)) continue;
      if (
        (run.requirement === undefined && this.#candidates.tiers === undefined) ||
        ++skipped > MAX_SKIPPED
      )
        break;
    }
    this.#waiting.shrank();
  }

  /** Starts the runs waiting in `shard`'s line while it can take them. */
  #serve(shard: Shard<T>): void {
    const lines = this.#waiting.lines;
    if (lines.size === 0) return;
    const now = this.#clock.now();
    for (
      let run = lines.head(shard);
      run !== undefined &&
      this.#inFlight < this.#options.maxInFlight &&
      this.#parts.router.canTake(shard, now, run.requirement);
      run = lines.head(shard)
    ) {
      lines.leave(run);
      if (!this.#route(run, now)) this.#waiting.enqueue(run, true, now); // no home now: the queue
    }
    this.#waiting.shrank();
  }

  // ——— the life of a run ———

  /**
   * Starts an attempt of `run` on `shard`: its slot is taken now, its `fn` called at the flush —
   * or at once, `direct`, when the start is the whole step.
   */
  #start(run: Run<T>, shard: Shard<T>, now: number, direct: boolean): void {
    this.#active.add(run);
    this.#inFlight++;
    const figures = this.#parts.figures;
    const ctx = run.start(shard, this.#availability.take(shard, run.bytes), now, figures.transit);
    const keyed = run.keyed;
    if (keyed !== undefined) {
      keyed.waitSinceMs = -1;
      if (keyed.displaced !== undefined) figures.displace(keyed.home!, keyed.displaced);
    }
    if (run.timeoutMs !== Number.POSITIVE_INFINITY) {
      run.cancelTimer = this.#clock.setTimer(() => {
        run.cancelTimer = undefined;
        this.#endAttempt(run, ctx, false, new TimeoutError(run.timeoutMs, shard.id), true);
      }, run.timeoutMs);
    }
    figures.attempt(shard, run.tier, run.bytes);
    if (direct) this.#call(run, ctx);
    else this.#defer(run, ctx);
  }

  /**
   * Announces the attempt `run` started (`pick`, `route`) and calls its `fn` — unless a listener
   * ended the attempt first (an abort, a close, its shard removed).
   */
  #call(run: Run<T>, ctx: AttemptContext): void {
    if (run.ctx !== ctx) return;
    const shard = run.shard!;
    announceAttempt(this.#events, run, shard);
    if (run.ctx !== ctx) return;
    let promise: Promise<unknown>;
    try {
      promise = run.fn(shard, ctx);
    } catch (error) {
      promise = Promise.reject(error);
    }
    Promise.resolve(promise).then(
      (value) => this.#endAttempt(run, ctx, true, value, false),
      (error) => this.#endAttempt(run, ctx, false, error, false),
    );
  }

  /** Runs the user code the step reached, in order (see {@link #after}); a nested flush goes on. */
  #flush(): void {
    const after = this.#after;
    while (this.#afterNext < this.#afterEnd) {
      const i = this.#afterNext;
      const next = after[i];
      const ctx = after[i + 1];
      after[i] = undefined; // nothing kept alive by the queue once run
      after[i + 1] = undefined;
      this.#afterNext = i + 2;
      if (typeof next === 'function') next();
      else this.#call(next as Run<T>, ctx as AttemptContext);
    }
    this.#afterNext = 0;
    this.#afterEnd = 0;
  }

  /** Queues a pair for the flush (see {@link #after}). */
  #defer(first: Run<T> | (() => void), second: AttemptContext | undefined): void {
    const after = this.#after;
    const end = this.#afterEnd;
    after[end] = first;
    after[end + 1] = second;
    this.#afterEnd = end + 2;
  }

  /**
   * Ends the attempt `ctx` of `run` (once: a late answer, after a timeout or an abort, finds its
   * context gone), frees its slot, feeds load and health, and settles or retries. What the end
   * tells user code — calls still running from the attempt (`ctx.signal`), `success`, `failure`,
   * `retry` — runs after the step; what it changes beyond its shard's figures (its limit, its
   * health, a push-back) is acted on once; then the lines and the queue are served.
   */
  #endAttempt(
    run: Run<T>,
    ctx: AttemptContext,
    ok: boolean,
    result: unknown,
    abort: boolean,
  ): void {
    if (run.ctx !== ctx) return;
    run.end();
    if (ctx.heard) {
      this.#later(
        ok ? () => ctx.finish(attemptOver) : () => ctx.abort(abort ? result : attemptOver()),
      );
    } else if (!ok) ctx.abort(abort ? result : attemptOver()); // nobody hears it: marked only
    const shard = run.shard!;
    const now = this.#clock.now();
    const latencyMs = now > run.attemptStartMs ? now - run.attemptStartMs : 0; // ≥ 0 if it steps back
    const feedback = this.#parts.feedback;
    const retryable = ok || feedback.retryable(result, run.retry);
    let limit: AttemptChanges['limit'];
    let health: AttemptChanges['health'];
    // The limit samples the in-flight count the attempt ran at, before its slot is freed.
    if (shard.limiter === undefined) this.#release(shard, run);
    else {
      this.#release(shard, run, () => {
        limit = feedback.sample(shard, latencyMs, !ok && feedback.drops(result, retryable));
      });
    }
    if (ok) {
      health = feedback.succeeded(shard, now < run.attemptStartMs ? -1 : latencyMs, now, run.probe);
      this.#settle(run, true, result);
      if (this.#events.listenerCount('success') > 0) {
        const event = { shardId: shard.id, attempt: run.attempt, latencyMs };
        this.#later(() => this.#events.emit('success', event));
      }
    } else {
      health = feedback.failed(shard, result, retryable, latencyMs, now, run.probe);
      this.#attemptFailed(run, shard, result, retryable, latencyMs, now);
    }
    const pushedBack = !ok && result instanceof PushBackError;
    if (
      (limit !== undefined || health !== undefined || pushedBack) &&
      this.#parts.changed(shard, { limit, health, pushedBack })
    ) {
      // Health or a limit that rose may let any line go: every line, then the queue.
      this.wake();
      return;
    }
    this.#serve(shard);
    this.#pump();
    if (this.#afterEnd > 0) this.#flush();
  }

  /** Frees an attempt's slot (`before`: what must see it still taken, the limit's sample). */
  #release(shard: Shard<T>, run: Run<T>, before?: () => void): void {
    this.#inFlight--;
    this.#availability.free(shard, run.bytes, run.probe, before);
    if (shard.removed && shard.inFlight === 0) this.#parts.membership.released(shard);
  }

  /** Retries a failed attempt after its backoff, or settles the run (`retry-policy.ts` decides). */
  #attemptFailed(
    run: Run<T>,
    shard: Shard<T>,
    error: unknown,
    retryable: boolean,
    latencyMs: number,
    now: number,
  ): void {
    noteFailure(run, shard, error, now);
    // A strict keyed run may use its home alone, and waits for that home's push-back.
    const home = this.#parts.router.strictHome(run, now);
    const pushBackWaitMs =
      home !== undefined ? Math.max(0, home.pushBack.untilMs - now) : this.#pushBackWait(run, now);
    const decision = decideRunRetry(
      run,
      error,
      retryable,
      pushBackWaitMs,
      now,
      home !== undefined,
      this.#parts,
    );
    const events = this.#events;
    const failure = events.listenerCount('failure') > 0;
    if (failure) {
      const event = {
        shardId: shard.id,
        attempt: run.attempt,
        latencyMs,
        error,
        willRetry: decision.retry,
      };
      this.#later(() => events.emit('failure', event));
    }
    if (!decision.retry) {
      if (decision.budgetRefused === true) this.#parts.figures.budgetExhausted++;
      this.#settle(run, false, finalError(run, error, decision, now, home));
      return;
    }
    // An abort or a close made by user code the end called (a classifier, a limit) stops it here.
    if (run.signal?.aborted === true) {
      this.#settle(run, false, run.signal.reason);
      return;
    }
    if (this.#stopAll !== undefined) {
      this.#settle(run, false, this.#stopAll);
      return;
    }
    const delayMs = decision.delayMs;
    this.#waiting.backOff(run, delayMs, now, pushBackWaitMs > 0 && delayMs === pushBackWaitMs);
    if (!failure && events.listenerCount('retry') === 0) {
      this.#parts.figures.retries++;
      return;
    }
    // Counted and announced after the failure's listeners, unless they stopped it.
    const event = { shardId: shard.id, attempt: run.attempt + 1, delayMs, error };
    this.#later(() => {
      if (run.state === 'settled') return;
      this.#parts.figures.retries++;
      if (events.listenerCount('retry') > 0) events.emit('retry', event);
    });
  }

  /** How long a retry of `run` waits for push-back (the retry policy's answer over its shards). */
  #pushBackWait(run: Run<T>, nowMs: number): number {
    const candidates = this.#candidates;
    return pushBackWait(candidates.members(run.requirement), candidates.panic, nowMs);
  }

  /** The caller's signal aborted, or the balancer closed without drain: settle with `reason`. */
  #abortRun(run: Run<T>, reason: unknown): void {
    if (run.state === 'running') {
      // Its attempt is ending (user code the end called aborted): that step settles it.
      if (run.ctx === undefined) return;
      const shard = run.shard!;
      const ctx = run.end();
      this.#release(shard, run);
      this.#settle(run, false, reason);
      if (ctx.heard) this.#later(() => ctx.abort(reason));
      else ctx.abort(reason);
      this.#serve(shard);
      this.#pump();
    } else if (run.state === 'queued' || run.state === 'backoff') {
      this.#settle(run, false, reason);
      this.#waiting.shrank();
    }
    this.#flush();
  }

  #abortAll(message: string): void {
    const error = new BalancerClosedError(message);
    this.#stopAll ??= error;
    for (const run of this.#waiting.everyone()) this.#settle(run, false, error);
    for (const run of [...this.#active]) this.#abortRun(run, error);
    this.#flush();
  }

  /** Runs `call` once the step is done (see {@link #after}). */
  #later(call: () => void): void {
    this.#defer(call, undefined);
  }

  /** A run() call refused before admission: counted in `refused`, never in `failed`. */
  refuse(error: unknown): Promise<never> {
    this.#parts.figures.refused++;
    return Promise.reject(error);
  }

  /** Settles a run exactly once; `refused`: turned away at admission (it would wait, full). */
  #settle(run: Run<T>, ok: boolean, value: unknown, refused = false): void {
    if (run.state === 'settled') return;
    if (run.waiting) {
      this.#waiting.remove(run);
    }
    run.settle();
    this.#active.delete(run);
    if (run.signal !== undefined) this.#signals.remove(run.signal, run);
    if (ok) {
      this.#parts.figures.completed++;
      run.resolve(value);
    } else {
      if (refused) this.#parts.figures.refused++;
      else this.#parts.figures.failed++;
      run.reject(value);
    }
    if (--this.#pending === 0) {
      const wait = this.#drainWait;
      this.#drainWait = undefined;
      wait?.resolve();
      if (this.#events.listenerCount('drained') > 0)
        this.#later(() => this.#events.emit('drained'));
    }
  }
}
