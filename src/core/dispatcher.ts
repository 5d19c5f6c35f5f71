/**
 * The life of a run: admission (or a wait, with backpressure), the queue pump, the start and end
 * of each attempt, retries after their backoff, and settlement — exactly once. Where an attempt
 * goes is routing's answer (`routing/`), what it teaches is feedback's (`feedback.ts`), whether
 * it is retried is the retry policy's (`retry-policy.ts`); this file carries them out.
 */
import type { EventEmitter } from 'eventemitter3';
import { AttemptContext, attemptOver, Run, type RunFn, type RunOptions } from '../admission/run.js';
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
import { decideRunRetry, finalError, noteFailure } from '../retry/policy.js';
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
  readonly #waiting: WaitingRoom<T>;
  readonly #signals = new SignalWatch<Run<T>>((run, reason) => this.#abortRun(run, reason));
  /** Runs that started an attempt and have not settled (running or backing off). */
  readonly #active = new Set<Run<T>>();
  readonly #settings = runSettings();
  #inFlight = 0;
  #pending = 0;
  /** Pumps begun: one begun inside another's route (a listener acted) makes its next node stale. */
  #pumps = 0;
  #closed = false;
  #drainWait: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(parts: DispatcherParts<T>) {
    this.#parts = parts;
    this.#events = parts.events;
    this.#clock = parts.clock;
    this.#options = parts.options;
    this.#candidates = parts.candidates;
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
      },
      serve: (shard) => this.#serve(shard),
      pump: () => this.#pump(),
      probeEarly: (shard) => parts.probeEarly(shard),
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
      if (run.shard === shard && run.state === 'running')
        this.#endAttempt(run, run.token, false, error, true);
    }
  }

  /**
   * The membership changed: keys may have new homes, so waiting keyed runs are routed again, and
   * a retry held only by push-back goes now if a shard it may use (a new one) does not push back.
   */
  membershipChanged(): void {
    const now = this.#clock.now();
    this.#waiting.requeueLines(now);
    this.#waiting.release(now, (run) => this.#candidates.pushBackWait(run, now) === 0);
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
        if (this.#route(run, now, full)) return;
      }
      if (full) {
        this.#settle(run, false, waiting.fullError(), true);
        return;
      }
      waiting.enqueue(run, false, now);
      // Runs held back by a rule or a tier do not block the others: this one may fit now.
      if (passable) this.#pump();
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
  #route(run: Run<T>, now: number, full = false): boolean {
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
      this.#waiting.leave(run);
      this.#waiting.count(run, -1);
      this.#start(run, route, now);
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
    let pumps = ++this.#pumps;
    let node = this.#waiting.queue.head;
    const now = this.#clock.now();
    let skipped = 0;
    while (node !== undefined && this.#inFlight < this.#options.maxInFlight) {
      const run = node;
      node = run.next as Run<T> | undefined;
      if (this.#route(run, now)) {
        // A listener acted meanwhile (a close, a nested pump): `node` may be stale, so restart.
        if (this.#pumps !== pumps || (node !== undefined && !node.queued)) {
          pumps = this.#pumps;
          node = this.#waiting.queue.head;
        }
        continue;
      }
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

  #start(run: Run<T>, shard: Shard<T>, now: number): void {
    run.state = 'running';
    run.attempt++;
    run.shard = shard;
    this.#active.add(run);
    this.#inFlight++;
    run.probe = this.#candidates.availability.take(shard, run.bytes);
    const ctx = new AttemptContext(run.attempt, this.#parts.figures.transit, shard, run.tier);
    run.ctx = ctx;
    run.attemptStartMs = now;
    const keyed = run.keyed;
    if (keyed !== undefined) {
      keyed.waitSinceMs = -1;
      if (keyed.displaced !== undefined) this.#parts.figures.displace(keyed.home!, keyed.displaced);
    }
    const token = run.token;
    if (run.timeoutMs !== Number.POSITIVE_INFINITY) {
      run.cancelTimer = this.#clock.setTimer(() => {
        run.cancelTimer = undefined;
        this.#endAttempt(run, token, false, new TimeoutError(run.timeoutMs, shard.id), true);
      }, run.timeoutMs);
    }
    this.#parts.figures.attempt(shard, run.tier, run.bytes);
    announceAttempt(this.#events, run, shard);
    if (run.token !== token) return; // a `pick` or `route` listener aborted it
    let promise: Promise<unknown>;
    try {
      promise = run.fn(shard, ctx);
    } catch (error) {
      promise = Promise.reject(error);
    }
    Promise.resolve(promise).then(
      (value) => this.#endAttempt(run, token, true, value, false),
      (error) => this.#endAttempt(run, token, false, error, false),
    );
  }

  /**
   * Ends the current attempt of `run` (once: `token` guards against the late settlement of an
   * attempt that already timed out or was aborted), frees its slot, feeds load and health, and
   * settles or retries. Calls still running from the attempt are stopped.
   */
  #endAttempt(run: Run<T>, token: number, ok: boolean, result: unknown, abort: boolean): void {
    if (run.token !== token || run.state !== 'running') return;
    run.token++;
    // Listeners run from here to settlement: an abort or close they make is kept in `stopped`.
    run.state = 'ending';
    const shard = run.shard!;
    run.cancelTimer?.();
    run.cancelTimer = undefined;
    if (ok) run.ctx!.finish(attemptOver);
    else run.ctx!.abort(abort ? result : attemptOver());
    run.ctx = undefined;
    const now = this.#clock.now();
    const latencyMs = now > run.attemptStartMs ? now - run.attemptStartMs : 0; // ≥ 0 if it steps back
    const feedback = this.#parts.feedback;
    const retryable = ok || feedback.retryable(result, run.retry);
    // What the attempt changes beyond its shard's figures (its limit, its health, a push-back) is
    // acted on once this step is done: nothing calls back into the dispatcher meanwhile.
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
      if (this.#events.listenerCount('success') > 0)
        this.#events.emit('success', { shardId: shard.id, attempt: run.attempt, latencyMs });
      this.#settle(run, true, result);
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
  }

  /** Frees an attempt's slot (`before`: what must see it still taken, the limit's sample). */
  #release(shard: Shard<T>, run: Run<T>, before?: () => void): void {
    this.#inFlight--;
    this.#candidates.availability.free(shard, run.bytes, run.probe, before);
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
      home !== undefined
        ? Math.max(0, home.pushBack.untilMs - now)
        : this.#candidates.pushBackWait(run, now);
    const decision = decideRunRetry(
      run,
      error,
      retryable,
      pushBackWaitMs,
      now,
      home !== undefined,
      this.#parts,
    );
    if (this.#events.listenerCount('failure') > 0) {
      const { id: shardId } = shard;
      this.#events.emit('failure', {
        shardId,
        attempt: run.attempt,
        latencyMs,
        error,
        willRetry: decision.retry,
      });
    }
    if (!decision.retry) {
      if (decision.budgetRefused === true) this.#parts.figures.budgetExhausted++;
      this.#settle(run, false, finalError(run, error, decision, now, home));
      return;
    }
    const delayMs = decision.delayMs;
    // An abort or a close that came while it ended (a listener made it) stops the retry.
    if (run.stopped === undefined) {
      this.#parts.figures.retries++;
      if (this.#events.listenerCount('retry') > 0)
        this.#events.emit('retry', { shardId: shard.id, attempt: run.attempt + 1, delayMs, error });
    }
    const stopped = run.stopped as Run<T>['stopped'];
    if (stopped !== undefined) {
      this.#settle(run, false, stopped.reason);
      return;
    }
    this.#waiting.backOff(run, delayMs, now, pushBackWaitMs > 0 && delayMs === pushBackWaitMs);
  }

  /** The caller's signal aborted, or the balancer closed without drain: settle with `reason`. */
  #abortRun(run: Run<T>, reason: unknown): void {
    if (run.state === 'ending') run.stopped ??= { reason };
    else if (run.state === 'running') {
      const shard = run.shard!;
      run.token++;
      run.state = 'ending'; // its `ctx.signal` listeners run next (`#settle` ends its timer)
      run.ctx?.abort(reason);
      run.ctx = undefined;
      this.#release(shard, run);
      this.#settle(run, false, reason);
      this.#serve(shard);
      this.#pump();
    } else if (run.state === 'queued' || run.state === 'backoff') {
      this.#settle(run, false, reason);
      this.#waiting.shrank();
    }
  }

  #abortAll(message: string): void {
    const error = new BalancerClosedError(message);
    for (const run of this.#waiting.everyone()) this.#settle(run, false, error);
    for (const run of [...this.#active]) this.#abortRun(run, error);
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
      this.#waiting.leave(run);
      this.#waiting.count(run, -1);
    }
    run.cancelTimer?.();
    run.cancelTimer = undefined;
    run.state = 'settled';
    run.shard = undefined;
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
      if (this.#events.listenerCount('drained') > 0) this.#events.emit('drained');
    }
  }
}
