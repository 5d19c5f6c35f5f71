import type { Writable } from 'node:stream';
import { EventEmitter } from 'eventemitter3';
import {
  BalancerClosedError,
  ConfigError,
  isShardwiseError,
  NoShardAvailableError,
  PickerError,
  PushBackError,
  QueueFullError,
  RetriesExhaustedError,
  ShardRemovedError,
  TimeoutError,
} from './errors.js';
import type { BalancerEvents } from './events.js';
import { RetryBudget } from './health/budget.js';
import { OutlierDetector } from './health/outlier.js';
import {
  backoffDelay,
  defaultRetryable,
  provesNotSent,
  type ResolvedRetryOptions,
} from './health/retry.js';
import { checkLoadReport, type LoadReportFigures } from './load/load-report.js';
import { TickClock } from './load/tick.js';
import {
  type BalancerOptions,
  checkShardList,
  checkShardSpec,
  checkTimeout,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { peakEwma } from './pickers/peak-ewma.js';
import { RunQueue } from './queue.js';
import {
  type CompiledRequirement,
  compileRequirement,
  type Requirement,
  satisfies,
} from './routing/requirement.js';
import {
  AttemptContext,
  type RouteReason,
  Run,
  type RunContext,
  type RunFn,
  type RunOptions,
} from './run.js';
import { entropyRandom, systemClock } from './runtime.js';
import { Shard } from './shard.js';
import {
  createWriteStream,
  type IngestOptions,
  type IngestSummary,
  ingest,
  type RecordOptions,
} from './stream.js';
import type {
  Clock,
  EwmaOptions,
  Key,
  Picker,
  PickRequest,
  RandomSource,
  ShardSpec,
  ShardState,
} from './types.js';
import { bool, checkKnownKeys, checkObject, nonNegativeInt } from './validate.js';

export type { RunContext, RunFn, RunOptions } from './run.js';

/** Options of {@link Balancer.wrap}. */
export interface WrapOptions<A extends unknown[]> {
  key?: (...args: A) => Key | undefined;
  require?: (...args: A) => Requirement | undefined;
  idempotent?: boolean;
  bytes?: (...args: A) => number;
}

/** One shard in `stats()`. */
export interface ShardStats {
  id: string;
  inFlight: number;
  ewmaMs: number;
  requests: number;
  failures: number;
  ejected: boolean;
  ejections: number;
  limit: number;
}

/** A plain snapshot of the balancer's figures. */
export interface BalancerStats {
  queued: number;
  inFlight: number;
  /** Runs that succeeded. */
  completed: number;
  /** Runs that rejected. */
  failed: number;
  /** Retry attempts started. */
  retries: number;
  /** Retries refused by the retry budget. */
  budgetExhausted: number;
  /** Keys sent past their first choice by a bounded-load picker. */
  spills: number;
  /** Panic mode is on (too few healthy shards: ejection ignored). */
  panic: boolean;
  shards: ShardStats[];
  /** Attempts and bytes per `prefer` tier, in tier order (empty without tiers). */
  tiers: { tier: number; requests: number; bytes: number }[];
  /** Attempts and bytes per label value: `labels.region.eu.requests`. */
  labels: Record<string, Record<string, { requests: number; bytes: number }>>;
}

const RUN_OPTION_KEYS = ['key', 'signal', 'timeoutMs', 'idempotent', 'bytes', 'require', 'meta'];
const NONE: readonly never[] = [];
/** The cache key of runs without a rule. */
const NO_RULE = {};
/** Runs with rules the queue scan may step over to find one that fits. */
const MAX_SKIPPED = 64;
const RESOLVED = Promise.resolve();

/**
 * Spreads runs across shards: admits them (or queues them, with backpressure), picks a shard when
 * a slot is free, calls, measures, retries elsewhere, and settles every run exactly once.
 *
 * @example
 * const balancer = new Balancer({ shards: [{ id: 'a', target: 'http://10.0.0.1' }], maxInFlightPerShard: 16 });
 * for await (const record of records) {
 *   await balancer.ready();
 *   balancer.run((shard, { signal }) => post(shard.target, record, signal), { idempotent: true }).catch(report);
 * }
 * await balancer.drain();
 */
export class Balancer<T = unknown> extends EventEmitter<BalancerEvents> {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly picker: Picker;
  readonly #options: ResolvedOptions;
  readonly #ewma: EwmaOptions;
  readonly #retry: ResolvedRetryOptions | false;
  /** Retry classifier (the default one when retries are off): also decides health failures. */
  readonly #classify: (error: unknown) => boolean;
  readonly #budget: RetryBudget | undefined;
  readonly #outliers: OutlierDetector | undefined;
  readonly #queue = new RunQueue<Run<T>>();
  /** Runs that started an attempt and have not settled (running or backing off). */
  readonly #active = new Set<Run<T>>();
  readonly #request: PickRequest;
  readonly #scratch: Shard<T>[] = [];
  #shards: Shard<T>[] = [];
  /** Members that cannot be offered now (at cap, or ejected outside panic). */
  #blocked = 0;
  #panic = false;
  #inFlight = 0;
  #pending = 0;
  #closed = false;
  #completed = 0;
  #failed = 0;
  #retries = 0;
  #budgetExhausted = 0;
  #offerEpoch = 0;
  #offered = new Uint32Array(0);
  #readyWait: { promise: Promise<void>; resolve: () => void } | undefined;
  #drainWait: { promise: Promise<void>; resolve: () => void } | undefined;
  readonly #removals = new Map<Shard<T>, () => void>();
  /**
   * The clock read once per pick (and per attempt end): load figures decay with it, so a
   * Peak-EWMA pick costs no clock read per shard.
   */
  #tick = 0;
  /** What shards read the time from: frozen at `#tick` while the picker runs. */
  readonly #ticker: TickClock;
  readonly #policy: ((meta: unknown) => Requirement | undefined) | undefined;
  #tiers: CompiledRequirement[] | undefined;
  #rules = new WeakMap<object, CompiledRequirement>();
  /** Per compiled rule, which members satisfy it (by index), for membership `version`. */
  readonly #masks = new WeakMap<
    CompiledRequirement,
    { version: number; mask: Uint8Array; members: readonly Shard<unknown>[] }
  >();
  #version = 0;
  /** Per rule (or `NO_RULE`): its first tier's members. */
  readonly #firstTiers = new WeakMap<
    object,
    { version: number; tier: number; mask: Uint8Array; members: readonly Shard<unknown>[] }
  >();
  /** Set when the candidates of the pending pick are a rule's cached members (its mask). */
  #ruleMembers: Uint8Array | undefined;
  readonly #tierStats: { tier: number; requests: number; bytes: number }[] = [];
  readonly #labelStats = new Map<string, Map<string, { requests: number; bytes: number }>>();
  #cancelSpillTimer: (() => void) | undefined;
  #spillTimerAt = Number.POSITIVE_INFINITY;

  constructor(options: BalancerOptions<T>, extraKnownOptions: readonly string[] = []) {
    super();
    this.#options = resolveOptions(options as BalancerOptions<unknown>, extraKnownOptions);
    checkShardList('shards', options.shards);
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? entropyRandom();
    const clock = this.clock;
    this.#tick = clock.now();
    this.#ticker = new TickClock(clock);
    this.picker = options.picker ?? peakEwma();
    this.#ewma = this.picker.ewma ?? {};
    this.#retry = this.#options.retry;
    this.#classify = this.#retry === false ? defaultRetryable : this.#retry.retryable;
    this.#budget =
      this.#retry !== false && this.#retry.budget !== false
        ? new RetryBudget(this.#retry.budget, this.clock)
        : undefined;
    const health = this.#options.health;
    this.#outliers =
      health === false
        ? undefined
        : new OutlierDetector(health, {
            clock: this.clock,
            members: () => this.#shards,
            healthChanged: (shard, change, durationMs) =>
              this.#healthChanged(shard as Shard<T>, change, durationMs),
          });
    this.#request = { key: undefined, attempt: 1, random: this.random, totalInFlight: 0, now: 0 };
    this.#policy = options.policy;
    const shards = options.shards.map((spec, i) => this.#newShard(spec, i));
    if (options.prefer !== undefined) {
      this.#tiers = options.prefer.map((tier, i) =>
        compileRequirement(`prefer[${i}]`, tier, shards),
      );
      for (let t = 0; t <= this.#tiers.length; t++)
        this.#tierStats.push({ tier: t, requests: 0, bytes: 0 });
    }
    this.#install(shards);
  }

  // ——— admission ———

  /**
   * Runs `fn` on a shard the picker chooses, when a slot is free. Resolves with `fn`'s value, or
   * rejects once with: the caller's abort reason, `TimeoutError`, `QueueFullError`,
   * `BalancerClosedError`, the error itself (not retried), or `RetriesExhaustedError` with every
   * attempt.
   */
  run<R>(fn: RunFn<T, R>, options?: RunOptions): Promise<R> {
    let key: Key | undefined;
    let signal: AbortSignal | undefined;
    let timeoutMs = this.#options.timeoutMs;
    let idempotent = false;
    let bytes = 0;
    let rule: CompiledRequirement | undefined;
    if (typeof fn !== 'function')
      return Promise.reject(new ConfigError('fn', 'must be a function', fn));
    if (options !== undefined) {
      try {
        checkObject('run options', options);
        checkKnownKeys('run options', options, RUN_OPTION_KEYS);
        key = options.key;
        if (key !== undefined && typeof key !== 'string' && !(key instanceof Uint8Array)) {
          throw new ConfigError('key', 'must be a string or a Uint8Array', key);
        }
        signal = options.signal;
        if (signal !== undefined && !(signal instanceof AbortSignal)) {
          throw new ConfigError('signal', 'must be an AbortSignal', signal);
        }
        if (options.timeoutMs !== undefined)
          timeoutMs = checkTimeout('timeoutMs', options.timeoutMs);
        if (options.idempotent !== undefined) idempotent = bool('idempotent', options.idempotent);
        if (options.bytes !== undefined) bytes = nonNegativeInt('bytes', options.bytes);
        if (options.require !== undefined) rule = this.#rule('require', options.require);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (rule === undefined && this.#policy !== undefined) {
      try {
        const derived = this.#policy(options?.meta);
        if (derived !== undefined) rule = this.#rule('policy(meta)', derived);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (this.#closed) return Promise.reject(new BalancerClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    const queueFirst = this.#queue.size > 0;
    if (
      queueFirst &&
      this.#options.overflow === 'reject' &&
      this.#queue.size >= this.#options.maxQueued
    ) {
      return Promise.reject(new QueueFullError(this.#options.maxQueued));
    }
    return new Promise<R>((resolve, reject) => {
      const run = new Run<T>(
        fn as RunFn<T, unknown>,
        key,
        signal,
        timeoutMs,
        idempotent,
        bytes,
        rule,
        this.clock.now(),
        resolve as (value: unknown) => void,
        reject,
      );
      this.#pending++;
      this.#budget?.deposit();
      if (signal !== undefined) {
        run.onAbort = () => this.#abortRun(run, signal.reason);
        signal.addEventListener('abort', run.onAbort, { once: true });
      }
      // Fast path: nothing waits ahead of this run, so try a slot at once.
      if (!queueFirst && this.#inFlight < this.#options.maxInFlight) {
        const shard = this.#select(run);
        if (shard !== undefined) {
          this.#start(run, shard);
          return;
        }
        if (run.state === 'settled') return;
      }
      if (this.#options.overflow === 'reject' && this.#queue.size >= this.#options.maxQueued) {
        this.#settle(run, false, new QueueFullError(this.#options.maxQueued));
        return;
      }
      this.#enqueue(run, false);
      // Runs held back by a rule or a tier do not block the others: this one may fit now.
      if (this.#tiers !== undefined || this.#queue.head!.requirement !== undefined) this.#pump();
    });
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
    if (typeof fn !== 'function') throw new ConfigError('fn', 'must be a function', fn);
    checkObject('wrap options', options);
    checkKnownKeys('wrap options', options, ['key', 'idempotent', 'bytes', 'require']);
    const { key, bytes, require } = options;
    if (require !== undefined && typeof require !== 'function') {
      throw new ConfigError('wrap.require', 'must be a function', require);
    }
    if (key !== undefined && typeof key !== 'function')
      throw new ConfigError('wrap.key', 'must be a function', key);
    if (bytes !== undefined && typeof bytes !== 'function') {
      throw new ConfigError('wrap.bytes', 'must be a function', bytes);
    }
    const idempotent =
      options.idempotent === undefined ? false : bool('wrap.idempotent', options.idempotent);
    return (...args: A) => {
      const runOptions: RunOptions = { idempotent };
      if (key !== undefined) runOptions.key = key(...args);
      if (bytes !== undefined) runOptions.bytes = bytes(...args);
      if (require !== undefined) {
        const rule = require(...args);
        if (rule !== undefined) runOptions.require = rule;
      }
      return this.run((shard, ctx) => fn(shard, ctx, ...args), runOptions);
    };
  }

  /**
   * An object-mode `Writable` whose backpressure is the balancer's; `finish` waits for every
   * record to settle, and the first record that fails after retries errors the stream with a
   * `WriteFailedError` holding the record and the cause.
   *
   * @example
   * await pipeline(Readable.from(records), balancer.createWriteStream({ send: (shard, record, { signal }) => post(shard.target, record, signal) }));
   */
  createWriteStream<Rec>(options: RecordOptions<T, Rec>): Writable {
    return createWriteStream(this, options);
  }

  /**
   * Sends every record of an (async) iterable, holding at most `maxQueued` waiting records in
   * memory. Never throws for a failed record: resolves with a summary listing them.
   *
   * @example
   * const summary = await balancer.ingest(readJsonl('data.jsonl'), { send: (shard, record) => post(shard.target, record), key: (r) => r.id });
   */
  ingest<Rec>(
    source: Iterable<Rec> | AsyncIterable<Rec>,
    options: IngestOptions<T, Rec>,
  ): Promise<IngestSummary<Rec>> {
    return ingest(this, source, options);
  }

  /** Resolves when a new `run` would not queue past `maxQueued` (like a stream's `'drain'`). */
  ready(): Promise<void> {
    if (this.#closed || this.#queue.size < this.#options.maxQueued) return RESOLVED;
    this.#readyWait ??= deferred();
    return this.#readyWait.promise;
  }

  /** Resolves when every admitted run has settled. */
  drain(): Promise<void> {
    if (this.#pending === 0) return RESOLVED;
    this.#drainWait ??= deferred();
    return this.#drainWait.promise;
  }

  /**
   * Stops admitting: new runs reject with `BalancerClosedError`. With `drain` (default true),
   * resolves when every admitted run has settled; without, queued runs reject and running ones
   * are aborted (their `ctx.signal` fires), all with `BalancerClosedError`.
   */
  close(options: { drain?: boolean } = {}): Promise<void> {
    checkObject('close options', options);
    checkKnownKeys('close options', options, ['drain']);
    const drain = options.drain === undefined ? true : bool('drain', options.drain);
    this.#closed = true;
    this.#readyWait?.resolve();
    this.#readyWait = undefined;
    if (!drain) {
      const error = new BalancerClosedError(
        'the balancer was closed without drain before this run finished',
      );
      while (this.#queue.head !== undefined) this.#settle(this.#queue.head, false, error);
      for (const run of [...this.#active]) this.#abortRun(run, error);
    }
    return this.drain();
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  // ——— membership ———

  /** The shards as pickers see them, in membership order. */
  get shards(): readonly ShardState<T>[] {
    this.#tick = this.clock.now();
    return this.#shards;
  }

  /** Adds a shard at the end of the membership order. */
  addShard(spec: ShardSpec<T>): void {
    checkShardSpec('shard', spec);
    if (this.#shards.some((s) => s.id === spec.id)) {
      throw new ConfigError('shard.id', 'must be unique, and is already a member', spec.id);
    }
    this.#install([...this.#shards, this.#newShard(spec, this.#shards.length)]);
    if (this.listenerCount('shardAdded') > 0) this.emit('shardAdded', { shardId: spec.id });
    this.#pump();
  }

  /**
   * Removes a shard: it gets no new picks. With `drain` (default true) its in-flight calls finish
   * and the promise resolves when they have; without, they are aborted with `ShardRemovedError`
   * (and retried elsewhere when their runs are idempotent).
   */
  removeShard(id: string, options: { drain?: boolean } = {}): Promise<void> {
    checkObject('removeShard options', options);
    checkKnownKeys('removeShard options', options, ['drain']);
    const drain = options.drain === undefined ? true : bool('drain', options.drain);
    const shard = this.#shards.find((s) => s.id === id);
    if (shard === undefined)
      return Promise.reject(new ConfigError('id', 'must name a member shard', id));
    return this.#remove(shard, drain);
  }

  /**
   * Makes the membership exactly `specs`, diffing by id: new ids are added, missing ones removed
   * (with drain), the rest keep their load figures and take the new weight, zone and labels.
   * Resolves when removed shards have drained.
   */
  setShards(specs: ShardSpec<T>[]): Promise<void> {
    checkShardList('shards', specs);
    const byId = new Map(this.#shards.map((s) => [s.id, s]));
    const next: Shard<T>[] = [];
    const added: string[] = [];
    specs.forEach((spec, i) => {
      const existing = byId.get(spec.id);
      if (existing !== undefined && existing.target === spec.target) {
        existing.weight = spec.weight ?? 1;
        existing.zone = spec.zone;
        existing.labels = Object.freeze({ ...(spec.labels ?? {}) });
        byId.delete(spec.id);
        next.push(existing);
      } else {
        next.push(this.#newShard(spec, i));
        added.push(spec.id);
      }
    });
    const gone = [...byId.values()];
    this.#install(next);
    const removals = gone.map((shard) => this.#detach(shard, true));
    if (this.listenerCount('shardRemoved') > 0) {
      for (const shard of gone) this.emit('shardRemoved', { shardId: shard.id, drained: true });
    }
    if (this.listenerCount('shardAdded') > 0)
      for (const id of added) this.emit('shardAdded', { shardId: id });
    this.#pump();
    return Promise.all(removals).then(() => undefined);
  }

  // ——— figures ———

  /** A plain snapshot of the balancer's figures. */
  stats(): BalancerStats {
    this.#tick = this.clock.now();
    return {
      queued: this.#queue.size,
      inFlight: this.#inFlight,
      completed: this.#completed,
      failed: this.#failed,
      retries: this.#retries,
      budgetExhausted: this.#budgetExhausted,
      spills: this.picker.spills ?? 0,
      panic: this.#panic,
      shards: this.#shards.map((s) => ({
        id: s.id,
        inFlight: s.inFlight,
        ewmaMs: s.rttMs,
        requests: s.requests,
        failures: s.failures,
        ejected: s.health === 'ejected',
        ejections: s.ejections,
        limit: s.limit,
      })),
      tiers: this.#tierStats.map((t) => ({ ...t })),
      labels: Object.fromEntries(
        [...this.#labelStats].map(([label, values]) => [
          label,
          Object.fromEntries([...values].map(([value, figures]) => [value, { ...figures }])),
        ]),
      ),
    };
  }

  // ——— internals: membership ———

  /**
   * A run's rule, checked against the membership and compiled once per rule object (loaders
   * usually pass the same few objects); the cache is dropped when the membership changes.
   */
  #rule(field: string, value: Requirement): CompiledRequirement {
    if (typeof value !== 'object' || value === null)
      return compileRequirement(field, value, this.#shards);
    let rule = this.#rules.get(value);
    if (rule === undefined) {
      rule = compileRequirement(field, value, this.#shards);
      this.#rules.set(value, rule);
      const mask = new Uint8Array(this.#shards.length);
      const members: Shard<T>[] = [];
      for (const shard of this.#shards) {
        mask[shard.index] = satisfies(shard, rule) ? 1 : 0;
        if (mask[shard.index] === 1) members.push(shard);
      }
      this.#masks.set(rule, { version: this.#version, mask, members });
    }
    return rule;
  }

  /** Which members satisfy `rule`, by index, while the membership is the one it was compiled for. */
  #maskOf(rule: CompiledRequirement): Uint8Array | undefined {
    const cached = this.#masks.get(rule);
    return cached !== undefined && cached.version === this.#version ? cached.mask : undefined;
  }

  /** Whether `shard` satisfies `rule` (a mask lookup when one is current). */
  #allows(rule: CompiledRequirement, shard: Shard<T>): boolean {
    const mask = this.#maskOf(rule);
    return mask === undefined ? satisfies(shard, rule) : mask[shard.index] === 1;
  }

  #newShard(spec: ShardSpec<T>, index: number): Shard<T> {
    const limit = this.#options.limitFactory?.() ?? this.#options.maxInFlightPerShard;
    return new Shard<T>(spec, index, limit, this.#ticker, this.#ewma);
  }

  /** Makes `shards` the membership: indexes, picker rebuild, availability. */
  #install(shards: Shard<T>[]): void {
    const tiers = this.#tiers;
    shards.forEach((shard, i) => {
      shard.index = i;
      if (tiers !== undefined) {
        const t = tiers.findIndex((tier) => satisfies(shard, tier));
        shard.tier = t < 0 ? tiers.length : t;
      }
    });
    this.picker.rebuild?.(shards);
    this.#shards = shards;
    this.#rules = new WeakMap();
    this.#version++;
    if (this.#offered.length < shards.length) this.#offered = new Uint32Array(shards.length * 2);
    this.#recount();
  }

  #remove(shard: Shard<T>, drain: boolean): Promise<void> {
    // Out of the membership first, so aborting its attempts (which frees slots and starts queued
    // runs) cannot hand it a new pick.
    this.#install(this.#shards.filter((s) => s !== shard));
    const done = this.#detach(shard, drain);
    if (this.listenerCount('shardRemoved') > 0)
      this.emit('shardRemoved', { shardId: shard.id, drained: drain });
    this.#pump();
    return done;
  }

  /** Marks a shard removed; resolves when its in-flight calls are over. */
  #detach(shard: Shard<T>, drain: boolean): Promise<void> {
    shard.removed = true;
    this.#outliers?.forget(shard);
    if (!drain) {
      const error = new ShardRemovedError(shard.id);
      for (const run of [...this.#active]) {
        if (run.shard === shard && run.state === 'running')
          this.#endAttempt(run, run.token, false, error, true);
      }
    }
    if (shard.inFlight === 0) return RESOLVED;
    return new Promise((resolve) => this.#removals.set(shard, resolve));
  }

  // ——— internals: availability ———

  #available(shard: Shard<T>): boolean {
    return !shard.removed && shard.hasRoom && (shard.health !== 'ejected' || this.#panic);
  }

  /** Recomputes panic mode and the count of shards that cannot be offered. O(n); on changes only. */
  #recount(): void {
    const panic = this.#outliers?.inPanic() ?? false;
    if (panic !== this.#panic) {
      this.#panic = panic;
      if (this.listenerCount('panic') > 0) {
        const total = this.#shards.length;
        this.emit('panic', {
          active: panic,
          healthy: total - (this.#outliers?.ejectedCount() ?? 0),
          total,
        });
      }
    }
    let blocked = 0;
    for (const shard of this.#shards) if (!this.#available(shard)) blocked++;
    this.#blocked = blocked;
  }

  #healthChanged(shard: Shard<T>, change: 'eject' | 'probe' | 'restore', durationMs: number): void {
    this.#recount();
    if (change === 'eject') {
      if (this.listenerCount('eject') > 0) {
        this.emit('eject', { shardId: shard.id, durationMs, ejections: shard.ejections });
      }
    } else if (this.listenerCount('restore') > 0) {
      this.emit('restore', { shardId: shard.id, phase: change === 'probe' ? 'probe' : 'healthy' });
    }
    if (change !== 'eject') this.#pump();
  }

  /**
   * The shards to offer a run, after its hard rule, health, caps and the shards it already tried.
   * The whole membership when all can take work and nothing filters (no copy); otherwise a
   * reused scratch array. With `prefer` tiers, the first tier that can take the run, or an empty
   * list while the run waits for a saturated tier (`spillAfterMs`).
   */
  #candidates(run: Run<T>): readonly Shard<T>[] {
    run.tier = -1;
    run.reason = 'direct';
    this.#ruleMembers = undefined;
    if (this.#blocked === 0 && run.tried === undefined) {
      if (this.#tiers === undefined) {
        if (run.requirement === undefined) return this.#shards;
        // Every member can take work: the rule's members, listed once per membership, will do.
        const cached = this.#masks.get(run.requirement);
        if (cached !== undefined && cached.version === this.#version && cached.members.length > 0) {
          this.#ruleMembers = cached.mask;
          return cached.members as readonly Shard<T>[];
        }
      } else {
        // Every member can take work: the first tier the rule allows, listed once per membership.
        const first = this.#firstTier(run.requirement);
        if (first !== undefined) {
          run.tier = first.tier;
          run.reason = 'preferred';
          this.#ruleMembers = first.mask;
          return first.members as readonly Shard<T>[];
        }
      }
    }
    const tiers = this.#tiers;
    if (tiers === undefined) return this.#collect(run, -1);
    let reason: RouteReason = 'preferred';
    for (let t = 0; t <= tiers.length; t++) {
      const out = this.#collect(run, t);
      if (out.length > 0) {
        run.tier = t;
        run.reason = reason;
        return out;
      }
      const state = this.#tierState(run, t);
      if (state === 'empty') continue;
      if (state === 'unhealthy') {
        reason = 'spill:unhealthy';
        continue;
      }
      const spillAt = run.queuedAtMs + this.#options.spillAfterMs;
      if (run.queued && this.clock.now() >= spillAt) {
        reason = 'spill:saturated';
        continue;
      }
      if (run.queued) this.#armSpillTimer(spillAt);
      return NONE;
    }
    return NONE;
  }

  /**
   * Fills the scratch list with the shards of tier `tier` (-1: any) that satisfy the run's rule,
   * can take a call, and were not tried by it — or, when that leaves none, were tried. When no
   * shard the rule allows is healthy, ejection is ignored inside the rule (panic within it).
   */
  #collect(run: Run<T>, tier: number): Shard<T>[] {
    const out = this.#scratch;
    out.length = 0;
    const rule = run.requirement;
    const epoch = ++this.#offerEpoch;
    const mask = rule === undefined ? undefined : this.#maskOf(rule);
    let ruledPanic = false;
    if (rule !== undefined && !this.#panic) {
      ruledPanic = true;
      for (const shard of this.#shards) {
        if (
          shard.health !== 'ejected' &&
          (mask === undefined ? satisfies(shard, rule) : mask[shard.index] === 1)
        ) {
          ruledPanic = false;
          break;
        }
      }
    }
    // A retry goes to a shard it has not tried; when those are only busy it waits for one, and
    // only when none is left (or all are ejected) it may go back to one it tried.
    let untriedWaiting = false;
    for (let pass = 0; pass < 2 && out.length === 0 && !untriedWaiting; pass++) {
      const tried = pass === 0 ? run.tried : undefined;
      for (const shard of this.#shards) {
        if (tier >= 0 && shard.tier !== tier) continue;
        if (
          rule !== undefined &&
          (mask === undefined ? !satisfies(shard, rule) : mask[shard.index] !== 1)
        )
          continue;
        if (tried?.includes(shard)) continue;
        if (!(this.#available(shard) || (ruledPanic && shard.hasRoom))) {
          if (shard.health !== 'ejected' || this.#panic || ruledPanic) untriedWaiting = true;
          continue;
        }
        out.push(shard);
        this.#offered[shard.index] = epoch;
      }
      if (run.tried === undefined) break;
    }
    return out;
  }

  /**
   * The members of the first tier that has any member `rule` allows (ignoring room and health:
   * for when every member can take work), cached per rule and membership version.
   */
  #firstTier(
    rule: CompiledRequirement | undefined,
  ): { tier: number; mask: Uint8Array; members: readonly Shard<unknown>[] } | undefined {
    const key: object = rule ?? NO_RULE;
    let cached = this.#firstTiers.get(key);
    if (cached === undefined || cached.version !== this.#version) {
      const mask = new Uint8Array(this.#shards.length);
      const members: Shard<T>[] = [];
      let tier = -1;
      for (let t = 0; t <= this.#tiers!.length && members.length === 0; t++) {
        for (const shard of this.#shards) {
          if (shard.tier === t && (rule === undefined || this.#allows(rule, shard)))
            members.push(shard);
        }
        tier = t;
      }
      for (const shard of members) mask[shard.index] = 1;
      cached = { version: this.#version, tier, mask, members };
      this.#firstTiers.set(key, cached);
    }
    return cached.members.length === 0 ? undefined : cached;
  }

  /** Why tier `t` offered nothing: it has no member the rule allows, none healthy, or none free. */
  #tierState(run: Run<T>, t: number): 'empty' | 'unhealthy' | 'saturated' {
    let members = 0;
    let healthy = 0;
    for (const shard of this.#shards) {
      if (
        shard.tier !== t ||
        (run.requirement !== undefined && !this.#allows(run.requirement, shard))
      )
        continue;
      members++;
      if (shard.health !== 'ejected' || this.#panic) healthy++;
    }
    if (members === 0) return 'empty';
    return healthy === 0 ? 'unhealthy' : 'saturated';
  }

  /** Wakes the queue when the earliest waiting run may spill to the next tier. */
  #armSpillTimer(atMs: number): void {
    if (atMs >= this.#spillTimerAt) return;
    this.#cancelSpillTimer?.();
    this.#spillTimerAt = atMs;
    this.#cancelSpillTimer = this.clock.setTimer(() => {
      this.#cancelSpillTimer = undefined;
      this.#spillTimerAt = Number.POSITIVE_INFINITY;
      this.#pump();
    }, atMs - this.clock.now());
  }

  /**
   * Picks a shard for `run`, or returns undefined when it must wait for a slot. A picker that
   * throws, returns nothing from a non-empty list, or returns a shard it was not offered settles
   * the run with an error (never a hang).
   */
  #select(run: Run<T>): Shard<T> | undefined {
    if (this.#shards.length === 0) {
      this.#settle(
        run,
        false,
        new NoShardAvailableError('the balancer has no shards: add one with addShard()'),
      );
      return undefined;
    }
    this.#tick = this.clock.now();
    const candidates = this.#candidates(run);
    if (candidates.length === 0) {
      const rule = run.requirement;
      if (rule !== undefined && !this.#shards.some((shard) => satisfies(shard, rule))) {
        this.#settle(
          run,
          false,
          new NoShardAvailableError(
            `no shard satisfies the run's rule (${rule.text}); it was sent nowhere`,
          ),
        );
      }
      return undefined;
    }
    const request = this.#request;
    request.key = run.key;
    request.attempt = run.attempt + 1;
    request.totalInFlight = this.#inFlight;
    request.now = this.#tick;
    let picked: ShardState | undefined | null;
    this.#ticker.tick = this.#tick;
    this.#ticker.frozen = true;
    try {
      picked = this.picker.pick(candidates, request);
    } catch (error) {
      this.#ticker.frozen = false;
      this.#settle(
        run,
        false,
        isShardwiseError(error)
          ? error
          : new PickerError(
              `picker "${this.picker.name}" threw: ${String((error as Error)?.message ?? error)}`,
              {
                cause: error,
              },
            ),
      );
      return undefined;
    }
    this.#ticker.frozen = false;
    if (picked === undefined) {
      this.#settle(
        run,
        false,
        new NoShardAvailableError(
          `picker "${this.picker.name}" chose none of the ${candidates.length} shard(s) it was offered`,
        ),
      );
      return undefined;
    }
    const shard = picked as Shard<T>;
    const offered =
      typeof picked !== 'object' || picked === null
        ? false
        : this.#shards[shard.index] !== shard
          ? false
          : candidates === this.#shards
            ? true
            : this.#ruleMembers !== undefined
              ? this.#ruleMembers[shard.index] === 1
              : this.#offered[shard.index] === this.#offerEpoch;
    if (!offered) {
      this.#settle(
        run,
        false,
        new PickerError(
          `picker "${this.picker.name}" returned ${describeShard(picked)}, which is not one of the shards it was offered`,
        ),
      );
      return undefined;
    }
    return shard;
  }

  // ——— internals: the life of a run ———

  #enqueue(run: Run<T>, first: boolean): void {
    run.state = 'queued';
    run.queuedAtMs = this.clock.now();
    if (first) this.#queue.unshift(run);
    else this.#queue.push(run);
    if (this.#queue.size === this.#options.maxQueued && this.listenerCount('saturated') > 0) {
      this.emit('saturated', { queued: this.#queue.size, maxQueued: this.#options.maxQueued });
    }
  }

  /**
   * Starts queued runs while slots are free, in arrival order. A run that cannot be placed stops
   * the scan — unless it has a rule or waits for a tier, when the runs behind it (which may go
   * elsewhere) are tried too, up to a bounded number.
   */
  #pump(): void {
    let node = this.#queue.head;
    let skipped = 0;
    while (node !== undefined && this.#inFlight < this.#options.maxInFlight) {
      const run = node;
      node = run.next as Run<T> | undefined;
      const shard = this.#select(run);
      if (shard !== undefined) {
        this.#queue.remove(run);
        this.#start(run, shard);
        continue;
      }
      if (run.state === 'settled') continue; // settled with an error; the next may fit
      if ((run.requirement === undefined && this.#tiers === undefined) || ++skipped > MAX_SKIPPED)
        break;
    }
    this.#queueShrank();
  }

  #queueShrank(): void {
    if (this.#readyWait !== undefined && this.#queue.size < this.#options.maxQueued) {
      const wait = this.#readyWait;
      this.#readyWait = undefined;
      wait.resolve();
      if (this.listenerCount('ready') > 0) this.emit('ready');
    }
  }

  #start(run: Run<T>, shard: Shard<T>): void {
    run.state = 'running';
    run.attempt++;
    run.shard = shard;
    this.#active.add(run);
    this.#inFlight++;
    shard.start(run.bytes);
    shard.requests++;
    if (!this.#available(shard)) this.#blocked++;
    const ctx = new AttemptContext(run.attempt);
    run.ctx = ctx;
    run.attemptStartMs = this.#tick; // set by #select just before
    const token = run.token;
    if (run.timeoutMs !== Number.POSITIVE_INFINITY) {
      run.cancelTimer = this.clock.setTimer(() => {
        run.cancelTimer = undefined;
        const error = new TimeoutError(run.timeoutMs, shard.id);
        this.#endAttempt(run, token, false, error, true);
      }, run.timeoutMs);
    }
    this.#account(run, shard);
    if (this.listenerCount('pick') > 0)
      this.emit('pick', { shard, attempt: run.attempt, key: run.key });
    if (this.listenerCount('route') > 0) {
      this.emit('route', {
        shardId: shard.id,
        attempt: run.attempt,
        requirement: run.requirement?.source,
        tier: run.tier < 0 ? undefined : run.tier,
        reason: run.reason,
      });
    }
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

  /** Attempts and bytes per tier and per label value. */
  #account(run: Run<T>, shard: Shard<T>): void {
    if (run.tier >= 0) {
      const tier = this.#tierStats[run.tier]!;
      tier.requests++;
      tier.bytes += run.bytes;
    }
    for (const label in shard.labels) {
      const value = shard.labels[label]!;
      let values = this.#labelStats.get(label);
      if (values === undefined) {
        values = new Map();
        this.#labelStats.set(label, values);
      }
      const figures = values.get(value);
      if (figures === undefined) values.set(value, { requests: 1, bytes: run.bytes });
      else {
        figures.requests++;
        figures.bytes += run.bytes;
      }
    }
  }

  /**
   * Ends the current attempt of `run` (once: `token` guards against the late settlement of an
   * attempt that already timed out or was aborted), frees its slot, feeds load and health, and
   * settles or retries.
   */
  #endAttempt(run: Run<T>, token: number, ok: boolean, result: unknown, abort: boolean): void {
    if (run.token !== token || run.state !== 'running') return;
    run.token++;
    run.cancelTimer?.();
    run.cancelTimer = undefined;
    if (abort) run.ctx?.abort(result);
    run.ctx = undefined;
    const shard = run.shard!;
    this.#tick = this.clock.now();
    const latencyMs = this.#tick - run.attemptStartMs;
    this.#release(run, shard, latencyMs, !ok && isDrop(result, this.#classify(result)));
    if (ok) {
      shard.successes++;
      shard.ewma.observe(latencyMs);
      this.#outliers?.onSuccess(shard);
      if (this.listenerCount('success') > 0) {
        this.emit('success', { shardId: shard.id, attempt: run.attempt, latencyMs });
      }
      this.#settle(run, true, result);
      this.#pump();
      return;
    }
    this.#attemptFailed(run, shard, result, latencyMs);
    this.#pump();
  }

  /**
   * Frees the attempt's slot; with a sample (`rttMs`), feeds the shard's adaptive limit first.
   * Availability may change both ways (a freed slot, a lower limit): `#blocked` follows.
   */
  #release(run: Run<T>, shard: Shard<T>, rttMs?: number, dropped = false): void {
    this.#inFlight--;
    const before = this.#available(shard);
    if (rttMs !== undefined && shard.limiter !== undefined) {
      shard.limiter.onSample({ rttMs, inFlight: shard.count, dropped });
      const next = Math.max(1, Math.floor(shard.limiter.limit));
      if (next !== shard.limit) {
        const previous = shard.limit;
        shard.limit = next;
        if (this.listenerCount('limit') > 0)
          this.emit('limit', { shardId: shard.id, limit: next, previous });
      }
    }
    shard.end(run.bytes);
    const after = this.#available(shard);
    if (!shard.removed && before !== after) this.#blocked += after ? -1 : 1;
    if (shard.removed && shard.inFlight === 0) {
      const resolve = this.#removals.get(shard);
      if (resolve !== undefined) {
        this.#removals.delete(shard);
        resolve();
      }
    }
  }

  #attemptFailed(run: Run<T>, shard: Shard<T>, error: unknown, latencyMs: number): void {
    const retry = this.#retry;
    const pushBack = error instanceof PushBackError ? error : undefined;
    // The classifier says both whether another shard may help and whether this one is at
    // fault; health uses it even when retries are off.
    const retryable = this.#classify(error);
    if (pushBack !== undefined) {
      // A signal of load, not of ill health: the shard costs more for a while.
      shard.holdPushBack(pushBack.retryAfterMs);
    } else if (isShardFault(error, retryable)) {
      shard.failures++;
      shard.ewma.observe(latencyMs);
      this.#outliers?.onFailure(shard);
    } else {
      shard.failures++;
    }
    const record = { shardId: shard.id, error, elapsedMs: this.#tick - run.admittedMs };
    if (run.records === undefined) run.records = [record];
    else run.records.push(record);
    if (run.tried === undefined) run.tried = [shard];
    else run.tried.push(shard);

    let reason: string | undefined;
    // True when the run wanted another attempt and was refused one (attempts, budget).
    let exhausted = false;
    if (retry === false) reason = 'retries are off';
    else if (!retryable) reason = 'the error is not retryable';
    else if (run.signal?.aborted) reason = 'the caller aborted';
    else if (!run.idempotent && !provesNotSent(error)) {
      reason = 'the run is not idempotent and the call may have reached the shard';
    } else if (run.attempt >= retry.attempts) {
      reason = `all ${retry.attempts} attempts failed`;
      exhausted = true;
    } else if (this.#budget !== undefined && !this.#budget.tryWithdraw()) {
      this.#budgetExhausted++;
      reason = 'the retry budget is exhausted';
      exhausted = true;
    }
    const willRetry = reason === undefined;
    if (this.listenerCount('failure') > 0) {
      this.emit('failure', {
        shardId: shard.id,
        attempt: run.attempt,
        latencyMs,
        error,
        willRetry,
      });
    }
    if (!willRetry) {
      const records = run.records!;
      const rule =
        run.requirement === undefined
          ? ''
          : `; its rule (${run.requirement.text}) allows no other shard`;
      const final =
        exhausted || records.length > 1
          ? new RetriesExhaustedError(records, `${reason!}${rule}`)
          : error;
      this.#settle(run, false, final);
      return;
    }
    const r = retry as ResolvedRetryOptions;
    let delayMs = backoffDelay(run.attempt, r.baseMs, r.maxMs, this.random);
    if (pushBack !== undefined && pushBack.retryAfterMs > delayMs) delayMs = pushBack.retryAfterMs;
    this.#retries++;
    if (this.listenerCount('retry') > 0) {
      this.emit('retry', { shardId: shard.id, attempt: run.attempt + 1, delayMs, error });
    }
    run.state = 'backoff';
    run.shard = undefined;
    if (delayMs <= 0) {
      this.#enqueue(run, true);
      return;
    }
    run.cancelTimer = this.clock.setTimer(() => {
      run.cancelTimer = undefined;
      if (run.state !== 'backoff') return;
      this.#enqueue(run, true);
      this.#pump();
    }, delayMs);
  }

  /** The caller's signal aborted, or the balancer closed without drain: settle with `reason`. */
  #abortRun(run: Run<T>, reason: unknown): void {
    if (run.state === 'running') {
      run.token++;
      run.cancelTimer?.();
      run.cancelTimer = undefined;
      run.ctx?.abort(reason);
      run.ctx = undefined;
      this.#release(run, run.shard!);
      this.#settle(run, false, reason);
      this.#pump();
      return;
    }
    if (run.state === 'queued' || run.state === 'backoff') {
      this.#settle(run, false, reason);
      this.#queueShrank();
    }
  }

  /** Settles a run exactly once and updates the figures. */
  #settle(run: Run<T>, ok: boolean, value: unknown): void {
    if (run.state === 'settled') return;
    if (run.queued) this.#queue.remove(run);
    run.cancelTimer?.();
    run.cancelTimer = undefined;
    run.state = 'settled';
    run.shard = undefined;
    this.#active.delete(run);
    if (run.onAbort !== undefined) run.signal?.removeEventListener('abort', run.onAbort);
    if (ok) {
      this.#completed++;
      run.resolve(value);
    } else {
      this.#failed++;
      run.reject(value);
    }
    if (--this.#pending === 0) {
      const wait = this.#drainWait;
      this.#drainWait = undefined;
      wait?.resolve();
      if (this.listenerCount('drained') > 0) this.emit('drained');
    }
  }

  /**
   * Records a shard's own ORCA load report (utilization, requests and errors per second, from
   * all its clients), for custom transports; the HTTP transport feeds the `endpoint-load-metrics`
   * response header by itself. `weightedByLoadReport()` weighs shards by these figures. Throws a
   * `ConfigError` for an unknown shard id or figures that are not finite numbers ≥ 0.
   *
   * @example
   * const reply = await grpcCall(shard.target);
   * balancer.reportLoad(shard.id, { cpuUtilization: reply.cpu, rpsFractional: reply.rps, eps: reply.eps });
   */
  reportLoad(shardId: string, report: LoadReportFigures): void {
    const shard = this.#shards.find((s) => s.id === shardId);
    if (shard === undefined) throw new ConfigError('shardId', 'must name a member shard', shardId);
    shard.loadReports.record(checkLoadReport('report', report));
  }
}

/** A failure that tells an adaptive limit to back off: timeout, push-back, or the shard's fault. */
function isDrop(error: unknown, retryable: boolean): boolean {
  return error instanceof PushBackError || isShardFault(error, retryable);
}

/** A failure that counts against the shard's health: retryable, and not of our own making. */
function isShardFault(error: unknown, retryable: boolean): boolean {
  return (
    retryable && !(error instanceof ShardRemovedError) && !(error instanceof BalancerClosedError)
  );
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function describeShard(value: unknown): string {
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { id?: unknown }).id === 'string'
  ) {
    return `shard "${(value as { id: string }).id}"`;
  }
  return String(value);
}
