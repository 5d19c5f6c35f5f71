import type { Writable } from 'node:stream';
import type { RunContext, RunFn, RunOptions } from '../admission/run.js';
import { type WrapOptions, wrapper } from '../admission/run-options.js';
import { GuardedEmitter } from '../base/callbacks.js';
import { BalancerClosedError, ConfigError } from '../base/errors.js';
import type { BalancerEvents } from '../base/events.js';
import { boundedRandom } from '../base/random.js';
import { entropyRandom, systemClock } from '../base/runtime.js';
import type {
  Clock,
  EwmaOptions,
  Key,
  Picker,
  RandomSource,
  ShardSpec,
  ShardState,
} from '../base/types.js';
import { bool, checkKnownKeys, checkObject } from '../base/validate.js';
import { OutlierDetector } from '../health/outlier.js';
import {
  type BatchIngestOptions,
  type BatchRecordOptions,
  checkKeyedPicker,
  createWriteStream,
  type IngestOptions,
  type IngestSummary,
  ingest,
  type RecordOptions,
  type RecordSource,
} from '../ingest/index.js';
import { INGEST_VIEW, type IngestView, ON_CLOSE } from '../ingest/types.js';
import { weighCaps } from '../limits/weighted.js';
import { type AttemptChanges, Feedback } from '../load/feedback.js';
import { checkLoadReport, type LoadReportFigures } from '../load/load-report.js';
import { Shard } from '../load/shard.js';
import { type BalancerStats, Figures } from '../load/stats.js';
import { TickClock } from '../load/tick.js';
import { TransitLedger } from '../load/transit.js';
import type { RehashEvent } from '../pickers/hashing/types.js';
import { peakEwma } from '../pickers/peak-ewma.js';
import { RetryBudget } from '../retry/budget.js';
import { defaultRetryable } from '../retry/options.js';
import { Availability } from '../routing/availability.js';
import { CandidateSet } from '../routing/candidates.js';
import { Router } from '../routing/router.js';
import { Dispatcher } from './dispatcher.js';
import { Membership, type MembershipHooks } from './membership.js';
import { type BalancerOptions, checkTimeout, resolveOptions } from './options.js';

export type { RunContext, RunFn, RunOptions } from '../admission/run.js';
export type { WrapOptions } from '../admission/run-options.js';
export { QUEUE_CEILING_FACTOR } from '../admission/waiting-room.js';
export type { BalancerStats, DisplacedCounts, ShardStats } from '../load/stats.js';

/** How a transport extends the core: membership hooks, and the option names it adds. */
export interface BalancerExtension<T, S> {
  knownOptions?: readonly string[];
  hooks?: MembershipHooks<T, S>;
}

/**
 * Spreads runs across shards: admits them (or queues them, with backpressure), routes each
 * attempt (rules, tiers, health, keyed homes), calls, measures, retries elsewhere, and settles
 * every run exactly once. A balancer is made of rooms, one concern each: membership, routing
 * (candidates, keyed homes), health, feedback into load figures, the retry policy, figures, and
 * the dispatcher that carries a run through them (see docs/architecture.md).
 *
 * @example
 * const balancer = new Balancer({ shards: [{ id: 'a', target: 'http://10.0.0.1' }], maxInFlightPerShard: 16 });
 * for await (const record of records) {
 *   await balancer.ready();
 *   balancer.run((shard, { signal }) => post(shard.target, record, signal), { idempotent: true }).catch(report);
 * }
 * await balancer.drain();
 */
export class Balancer<T = unknown, S = ShardSpec<T>> extends GuardedEmitter<BalancerEvents> {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly picker: Picker;
  readonly #outliers: OutlierDetector<Shard<T>> | undefined;
  readonly #membership: Membership<T, S>;
  readonly #candidates: CandidateSet<T>;
  readonly #availability: Availability<T>;
  readonly #figures: Figures;
  readonly #router: Router<T>;
  readonly #dispatcher: Dispatcher<T>;
  /** The transports' release, once `close()` has drained or aborted every run. */
  #released: Promise<void> | undefined;
  #shardsView: { version: number; list: readonly ShardState<T>[] } | undefined;
  /** Ingestions waiting on their source, told when `close()` is called. */
  readonly #closeListeners = new Set<() => void>();
  /** What ingestions read of this balancer beyond its public API. */
  readonly #ingestView: IngestView;

  constructor(options: BalancerOptions<T>, extension: BalancerExtension<T, S> = {}) {
    super();
    const o = resolveOptions(options as BalancerOptions<unknown>, extension.knownOptions);
    this.clock = options.clock ?? systemClock;
    this.random = options.random === undefined ? entropyRandom() : boundedRandom(options.random);
    this.#figures = new Figures(new TransitLedger(o.transitLabel, this));
    this.picker = options.picker ?? peakEwma();
    // Load figures read the time from here: frozen at the pick's time while the picker runs.
    const ticker = new TickClock(this.clock);
    const ewma: EwmaOptions = this.picker.ewma ?? {};
    const membership = new Membership<T, S>(
      {
        picker: this.picker,
        newShard: (spec, index) =>
          new Shard<T>(spec, index, o.limitFactory?.() ?? o.maxInFlightPerShard, ticker, ewma),
        installed: (shards) => {
          if (o.limitFactory === undefined) weighCaps(shards, o.maxInFlightPerShard);
          this.#candidates.installed(shards);
        },
        abortAttempts: (shard, error) => this.#dispatcher.abortAttempts(shard, error),
        changed: (added, removed, drained) => this.#membershipChanged(added, removed, drained),
      },
      extension.hooks ?? {},
    );
    this.#membership = membership;
    const specs = membership.prepare('shards', options.shards);
    this.#outliers =
      o.health === false
        ? undefined
        : new OutlierDetector<Shard<T>>(o.health, {
            clock: this.clock,
            members: () => membership.shards,
            healthChanged: (shard, change, durationMs, early) =>
              this.#healthChanged(shard, change, durationMs, early === true),
          });
    this.#availability = new Availability<T>({
      members: () => membership.shards,
      inPanic: () => this.#outliers?.inPanic() ?? false,
      panicChanged: (active) => this.#panicChanged(active),
    });
    this.#candidates = new CandidateSet<T>(
      {
        clock: this.clock,
        spillAfterMs: o.spillAfterMs,
        membership,
        availability: this.#availability,
        pump: () => this.#dispatcher.wake(),
      },
      options.prefer,
    );
    if (options.prefer !== undefined) this.#figures.useTiers(options.prefer.length);
    const feedback = new Feedback<T>(
      o.retry === false ? defaultRetryable : o.retry.retryable,
      this.#outliers,
    );
    this.#router = new Router<T>({
      picker: this.picker,
      random: this.random,
      ticker,
      candidates: this.#candidates,
      membership,
      inFlight: () => this.#dispatcher.inFlight,
    });
    this.#dispatcher = new Dispatcher<T>({
      events: this,
      clock: this.clock,
      random: this.random,
      options: o,
      membership: membership as unknown as Membership<T, never>,
      candidates: this.#candidates,
      router: this.#router,
      feedback,
      retry: o.retry,
      budget:
        o.retry !== false && o.retry.budget !== false
          ? new RetryBudget(o.retry.budget, this.clock)
          : undefined,
      figures: this.#figures,
      policy: options.policy,
      probeEarly: (shard) => this.#outliers?.probeEarly(shard),
      changed: (shard, changes) => this.#attemptChanged(shard, changes),
    });
    membership.start(specs);
    const availability = this.#availability;
    const clock = this.clock;
    this.#ingestView = {
      retry: o.retry,
      deliveryTimeoutMs: o.deliveryTimeoutMs,
      strict: this.#router.strict,
      blocked: (state) => availability.why(state as Shard<T>, clock.now()),
    };
    const picker = this.picker as { onRehash?: (listener: (e: RehashEvent) => void) => unknown };
    picker.onRehash?.((event) => {
      // Keys have new homes, as after a membership change: runs waiting at their old home, and
      // keyed batches built for it, find the new one.
      this.#membership.version++;
      this.#dispatcher.membershipChanged();
      if (this.listenerCount('rehash') > 0) this.emit('rehash', event);
    });
  }

  /**
   * Runs `fn` on a shard the picker chooses, when a slot is free. Resolves with `fn`'s value, or
   * rejects once with: the caller's abort reason, `TimeoutError`, `QueueFullError`,
   * `BalancerClosedError`, `ShardUnavailableError` (a keyed run's home stayed unavailable), the
   * error itself (not retried), or `RetriesExhaustedError` with every attempt.
   */
  run<R>(fn: RunFn<T, R>, options?: RunOptions): Promise<R> {
    return this.#dispatcher.run(fn, options);
  }

  /**
   * Rejects a transport's run-like call (`request()`, `putObject()`) that its own checks turned
   * away before it became a run: counted in `stats().refused`, as `run()` counts its own.
   */
  protected refuse(error: unknown): Promise<never> {
    return this.#dispatcher.refuse(error);
  }

  /**
   * Returns a function with `fn`'s trailing arguments that runs through the balancer.
   *
   * @example
   * const put = balancer.wrap((shard, ctx, id: string, body: string) => upload(shard.target, id, body, ctx.signal), { key: (id) => id, idempotent: true });
   * await put('record-1', '{"a":1}');
   */
  wrap<A extends unknown[], R>(
    fn: (shard: ShardState<T>, ctx: RunContext, ...args: A) => Promise<R>,
    options: WrapOptions<A> = {},
  ): (...args: A) => Promise<R> {
    return wrapper<T, A, R>(
      (f, o) => this.run(f, o),
      (error) => this.refuse(error),
      fn,
      options,
    );
  }

  /**
   * An object-mode `Writable` whose backpressure is the balancer's (a `RecordWriteStream`): each
   * record that fails is reported (`'failed'`); the first failure makes it refuse new records,
   * then error with a `WriteFailedError`. With `batch`, `send` delivers batches.
   *
   * @example
   * await pipeline(Readable.from(records), balancer.createWriteStream({ send: (shard, record, { signal }) => post(shard.target, record, signal) }));
   */
  createWriteStream<Rec>(options: BatchRecordOptions<T, Rec>): Writable;
  createWriteStream<Rec>(options: RecordOptions<T, Rec>): Writable;
  createWriteStream<Rec>(options: RecordOptions<T, Rec>): Writable {
    checkKeyedPicker('createWriteStream', this.picker, options);
    return createWriteStream(this, options);
  }

  /**
   * Sends every record of an (async) iterable: each is written or reported failed, exactly once,
   * in the summary (or the `IngestError` when the source throws, the signal aborts or the
   * balancer closes). With `batch`, `send(shard, records, ctx)` sends a batch per run.
   *
   * @example
   * const summary = await balancer.ingest(readJsonl('data.jsonl'), { send: (shard, record) => post(shard.target, record), key: (r) => r.id });
   */
  ingest<Rec>(
    source: RecordSource<Rec>,
    options: BatchIngestOptions<T, Rec>,
  ): Promise<IngestSummary<Rec>>;
  ingest<Rec>(
    source: RecordSource<Rec>,
    options: IngestOptions<T, Rec>,
  ): Promise<IngestSummary<Rec>>;
  async ingest<Rec>(
    source: RecordSource<Rec>,
    options: IngestOptions<T, Rec>,
  ): Promise<IngestSummary<Rec>> {
    checkKeyedPicker('ingest', this.picker, options);
    return ingest(this, source, options);
  }

  /**
   * The id of the shard `key` lives on (its home), under a keyed picker; undefined for a picker
   * that does not route by key, or when there is no shard.
   */
  homeOf(key: Key): string | undefined {
    if (typeof key !== 'string' && !(key instanceof Uint8Array)) {
      throw new ConfigError('key', 'must be a string or a Uint8Array', key);
    }
    const home = this.#router.homeOf(key, this.clock.now());
    return home instanceof Shard ? home.id : undefined;
  }

  /** Resolves when a new `run` would not queue past `maxQueued` (like a stream's `'drain'`). */
  ready(): Promise<void> {
    return this.#dispatcher.ready();
  }

  /**
   * Resolves when every admitted run has settled. With `timeoutMs`, rejects with a `TimeoutError`
   * if some run has not settled by then (the runs go on: `close({ drain: false })` stops them).
   */
  drain(options: { timeoutMs?: number } = {}): Promise<void> {
    let timeoutMs: number;
    try {
      checkObject('drain options', options);
      checkKnownKeys('drain options', options, ['timeoutMs']);
      timeoutMs =
        options.timeoutMs === undefined
          ? Number.POSITIVE_INFINITY
          : checkTimeout('drain.timeoutMs', options.timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#dispatcher.drain(timeoutMs);
  }

  /**
   * Stops admitting: new runs reject with `BalancerClosedError`. With `drain` (default true),
   * resolves when every admitted run has settled; without, queued runs reject and running ones
   * are aborted (their `ctx.signal` fires), all with `BalancerClosedError`. With `timeoutMs`, a
   * draining close aborts what still runs after that long. Then transports release their
   * resources (connection pools).
   */
  close(options: { drain?: boolean; timeoutMs?: number } = {}): Promise<void> {
    let drain: boolean;
    let timeoutMs: number;
    try {
      checkObject('close options', options);
      checkKnownKeys('close options', options, ['drain', 'timeoutMs']);
      drain = options.drain === undefined ? true : bool('drain', options.drain);
      timeoutMs =
        options.timeoutMs === undefined
          ? Number.POSITIVE_INFINITY
          : checkTimeout('close.timeoutMs', options.timeoutMs);
    } catch (error) {
      // Like every method that returns a promise, bad input rejects it rather than throwing.
      return Promise.reject(error);
    }
    // Each call may abort what still runs (a second `close({ drain: false })` forces one that
    // drains); the transports' release is one, which every call waits for.
    const closing = this.#dispatcher.close(drain, timeoutMs);
    for (const listener of [...this.#closeListeners]) listener();
    this.#closeListeners.clear();
    return closing.then(() => {
      this.#candidates.stopSpillTimer();
      this.#released ??= this.#membership.close(drain);
      return this.#released;
    });
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#dispatcher.closed;
  }

  /** For ingestions: the balancer's settings and availability (see `IngestView`). */
  [INGEST_VIEW](): IngestView {
    return this.#ingestView;
  }

  /** For ingestions: calls `listener` once `close()` is called (at once if it was). */
  [ON_CLOSE](listener: () => void): () => void {
    if (this.closed) {
      listener();
      return () => {};
    }
    this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  // ——— membership ———

  /**
   * The shards as pickers see them, in membership order: a copy, the same one until the
   * membership changes, so a `pop()` on it cannot take a shard out behind the balancer's back.
   * Not frozen: a frozen array's elements are read at half the speed, and pickers composed over
   * this list read it on every pick.
   */
  get shards(): readonly ShardState<T>[] {
    const version = this.#membership.version;
    if (this.#shardsView?.version !== version) {
      this.#shardsView = { version, list: [...this.#membership.shards] };
    }
    return this.#shardsView.list;
  }

  /**
   * Adds a shard at the end of the membership order. Throws `BalancerClosedError` once `close()`
   * was called: nothing would release what a transport opened for it.
   */
  addShard(spec: S): void {
    if (this.closed) throw new BalancerClosedError('the balancer is closed: no shard is added');
    this.#membership.add(spec);
  }

  /**
   * Removes a shard: it gets no new picks; keyed runs waiting for it find their new home. With
   * `drain` (default true) its in-flight calls finish and the promise resolves when they have;
   * without, they are aborted with `ShardRemovedError` (and retried elsewhere when idempotent).
   */
  removeShard(id: string, options: { drain?: boolean } = {}): Promise<void> {
    try {
      checkObject('removeShard options', options);
      checkKnownKeys('removeShard options', options, ['drain']);
      return this.#membership.remove(
        id,
        options.drain === undefined ? true : bool('drain', options.drain),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Makes the membership exactly `specs`, diffing by id: new ids are added, missing ones removed
   * (with drain), the rest keep their load figures and take the new weight, zone and labels.
   * Resolves when removed shards have drained. A membership the picker cannot build throws a
   * `ConfigError` and changes nothing.
   */
  setShards(specs: S[]): Promise<void> {
    if (this.closed) {
      return Promise.reject(
        new BalancerClosedError('the balancer is closed: its shards are fixed'),
      );
    }
    return this.#membership.set(specs);
  }

  /**
   * Feeds what a shard reported about its own load, for transports (the HTTP one does it for the
   * `loadHeader` and `endpoint-load-metrics` response headers; a custom one may, with the shard or
   * id its `send` was given): a number is a load figure (`x-shard-load`), folded into the shard's
   * `load` and `cost` while fresh (10 s); an object is an ORCA report (utilization, requests and
   * errors per second from all its clients), which `weightedByLoadReport()` weighs shards by.
   * A shard removed with drain takes reports until its last call ends. Throws a `ConfigError` for
   * an unknown shard or figures that are not finite numbers ≥ 0.
   *
   * @example
   * const reply = await grpcCall(shard.target);
   * balancer.reportLoad(shard.id, { cpuUtilization: reply.cpu, rpsFractional: reply.rps, eps: reply.eps });
   */
  reportLoad(shard: string | ShardState<T>, load: number | LoadReportFigures): void {
    const member = this.#membership.member(shard);
    if (typeof load === 'object' && load !== null) {
      member.loadReports.record(checkLoadReport('report', load));
      return;
    }
    if (typeof load !== 'number' || !Number.isFinite(load) || load < 0) {
      throw new ConfigError('load', 'must be a finite number ≥ 0, or an ORCA report', load);
    }
    member.reportLoad(load);
  }

  // ——— figures ———

  /** A plain snapshot of the balancer's figures. */
  stats(): BalancerStats {
    return this.#figures.snapshot(this.#membership.shards, {
      queued: this.#dispatcher.queued,
      retrying: this.#dispatcher.retrying,
      inFlight: this.#dispatcher.inFlight,
      spills: this.picker.spills ?? 0,
      panic: this.#availability.panic,
    });
  }

  // ——— membership, health and panic, as events ———

  #membershipChanged(
    added: readonly Shard<T>[],
    removed: readonly Shard<T>[],
    drained: boolean,
  ): void {
    for (const shard of removed) this.#outliers?.forget(shard);
    if (this.listenerCount('shardRemoved') > 0) {
      for (const shard of removed) this.emit('shardRemoved', { shardId: shard.id, drained });
    }
    if (this.listenerCount('shardAdded') > 0)
      for (const shard of added) this.emit('shardAdded', { shardId: shard.id });
    this.#dispatcher.membershipChanged();
  }

  /**
   * What an ended attempt changed, acted on once the dispatcher's step is done (it then serves its
   * lines and pumps once, all of them when this returns true): the `limit` event and a limit the
   * shards share, the push-back routing spares, a health change.
   */
  #attemptChanged(shard: Shard<T>, { limit, health, pushedBack }: AttemptChanges): boolean {
    let all = false;
    if (limit !== undefined) {
      if (this.listenerCount('limit') > 0)
        this.emit('limit', { shardId: shard.id, limit: limit.limit, previous: limit.previous });
      all = this.#shareLimit(shard, limit.limit);
    }
    if (pushedBack) {
      this.#candidates.pushedBack(shard.pushBack.untilMs);
      this.#dispatcher.unavailable(shard, 'pushback');
    }
    if (health !== undefined) {
      this.#health(shard, health.change, health.durationMs, health.early);
      all = true;
    }
    return all;
  }

  /**
   * A health change from a timer (an ejection's end, an early probe): acted on, then every line
   * served and the queue pumped.
   */
  #healthChanged(
    shard: Shard<T>,
    change: 'eject' | 'probe' | 'restore',
    durationMs: number,
    early: boolean,
  ): void {
    this.#health(shard, change, durationMs, early);
    this.#dispatcher.wake();
  }

  /**
   * Availability follows a health change, keyed runs waiting for an ejected home wait against
   * their deadline, and the change is announced. `early`: an early probe (asked for by keyed work
   * waiting for an ejected home) began or failed; the ejection is the same one, so no event
   * announces it. Panic ignores ejection — all over, or within a rule whose last healthy shard
   * this was: whoever acts on this wakes every line after.
   */
  #health(
    shard: Shard<T>,
    change: 'eject' | 'probe' | 'restore',
    durationMs: number,
    early: boolean,
  ): void {
    this.#availability.recount();
    if (change === 'eject') {
      this.#dispatcher.unavailable(shard, 'ejected');
      if (!early && this.listenerCount('eject') > 0)
        this.emit('eject', { shardId: shard.id, durationMs, ejections: shard.health.ejections });
      return;
    }
    if (!early && this.listenerCount('restore') > 0)
      this.emit('restore', { shardId: shard.id, phase: change === 'probe' ? 'probe' : 'healthy' });
  }

  /**
   * One `ConcurrencyLimit` object given for every shard (no `clone()`): what one shard's sample
   * moved is every shard's cap at once, not only the sampling shard's until each samples.
   */
  #shareLimit(shard: Shard<T>, limit: number): boolean {
    const shards = this.#membership.shards;
    const other = shards[0] === shard ? shards[1] : shards[0];
    if (other === undefined || other.limiter !== shard.limiter) return false;
    let raised = false;
    for (const s of shards) {
      if (s === shard || s.limiter !== shard.limiter || s.limit === limit) continue;
      const previous = s.limit;
      if (this.#availability.setLimit(s, limit)) raised = true;
      if (this.listenerCount('limit') > 0) this.emit('limit', { shardId: s.id, limit, previous });
    }
    return raised;
  }

  #panicChanged(active: boolean): void {
    if (this.listenerCount('panic') > 0) {
      const total = this.#membership.shards.length;
      this.emit('panic', { active, healthy: total - (this.#outliers?.ejectedCount() ?? 0), total });
    }
  }
}
