/**
 * The transport plug-in: what a `Balancer` is built with to speak a protocol (tower's `Balance`
 * over a `Service`, undici's `PoolBase` whose subclasses supply one method). The balancer owns
 * admission, routing, health and retries; a transport owns its per-target resources, its calls
 * and what it adds to the figures, and reaches the balancer only through the parts below. The
 * core defines this contract and never imports an implementation (`http/`, `s3/`, `transport/`).
 */

import type { RunContext, RunFn, RunOptions } from '../admission/run.js';
import type { Clock, ShardSpec, ShardState } from '../base/types.js';
import type { TransportPlan } from '../ingest/transport-plan.js';
import type { RunnerLike } from '../ingest/types.js';
import type { BalancerStats } from '../load/stats.js';
import type { MembershipHooks } from './membership.js';

/**
 * What a balancer hands its transport once built ({@link Transport.attach}): the door for the
 * transport's own calls. `refuse` rejects a call its checks turned away before it became a run,
 * counted in `stats().refused` as `run()` counts its own.
 */
export interface TransportHost<T> {
  readonly clock: Clock;
  run<R>(fn: RunFn<T, R>, options?: RunOptions): Promise<R>;
  refuse(error: unknown): Promise<never>;
}

/**
 * A transport's batch call: how `ingest()` and `createWriteStream()` send records when their
 * options carry no `send` (one HTTP request, one S3 object per batch).
 */
export interface BatchCall<T> {
  /** The name its options are checked under: `'http'` names `http.ingest.path`. */
  readonly name: string;
  /**
   * The checked options and the sink that sends each batch as one call of the transport.
   * `field` names the options (`http.ingest`); `extraKeys` are the names the caller's entry
   * point adds (`ingest`'s `onProgress`, `signal`, …). Throws a `ConfigError` for bad options.
   */
  plan<Rec>(
    runner: RunnerLike<T>,
    field: string,
    options: unknown,
    extraKeys: readonly string[],
  ): TransportPlan<Rec>;
}

/**
 * A transport plug-in: every part optional, so `{ knownOptions, hooks }` alone is one (what
 * discovery or a custom owner of per-shard resources needs). The balancer reads each part at
 * its own moment: `knownOptions` and `hooks` as it is built, `attach` once it is, `batch` at
 * each `ingest`/`createWriteStream` given no `send`, `stats` at each `stats()`, `release` once
 * it has closed. A transport's own calls (`request()`, `putObject()`) are {@link TransportCall}s
 * run through the host ({@link callThrough}).
 *
 * @example
 * const echo: Transport<string> = {
 *   knownOptions: ['greeting'],
 *   batch: {
 *     name: 'echo',
 *     plan: (runner, field, options, extra) => myPlan(runner, field, options, extra),
 *   },
 *   stats: (base) => ({ ...base, echoed: count }),
 *   release: () => socket.close(),
 * };
 * const balancer = new Balancer({ shards, greeting: 'hi' } as BalancerOptions<string>, echo);
 */
export interface Transport<T, S = ShardSpec<T>> {
  /** Option names the transport adds to the balancer's (the core rejects any other unknown name). */
  readonly knownOptions?: readonly string[] | undefined;
  /** How it follows the membership: specs prepared, per-target resources opened and retired. */
  readonly hooks?: MembershipHooks<T, S> | undefined;
  /** Given the balancer's door once, at the end of its constructor. */
  attach?(host: TransportHost<T>): void;
  /** Its batch call, used by `ingest`/`createWriteStream` when their options carry no `send`. */
  readonly batch?: BatchCall<T> | undefined;
  /**
   * Its figures added to the core's snapshot (`shards` in membership order, as `base.shards`):
   * the HTTP transport adds each pool's connections.
   */
  stats?(base: BalancerStats, shards: readonly ShardState<T>[]): BalancerStats;
  /**
   * Releases what it holds, once: after `close()` drained or aborted every run and the
   * membership's `closed` hook ran. `close()` resolves when this has.
   */
  release?(drain: boolean): Promise<void> | void;
}

/** The job every attempt of one call shares, and the options of its run. */
export interface CallPlan<Job> {
  job: Job;
  run: RunOptions;
}

/**
 * One call of a transport (`http.request()`, `s3.putObject()`): its request checked into a job,
 * then one run whose attempts each carry the job to the shard the balancer picked.
 */
export interface TransportCall<T, Req, Job, R> {
  /**
   * Checks `request` (throws a `ConfigError` naming the field). A promise when work is done once
   * before admission (a body compressed); a rejection refuses the call as a throw does.
   */
  prepare(request: Req): CallPlan<Job> | Promise<CallPlan<Job>>;
  /** One attempt of the job on `shard`; `ctx` ends with the attempt. */
  attempt(shard: ShardState<T>, ctx: RunContext, job: Job): Promise<R>;
}

/**
 * A transport's call as one run on `host`: a request its checks refuse rejects (counted in
 * `stats().refused`), never throws; the rest is the run's (routing, retries, settlement).
 */
export function callThrough<T, Req, Job, R>(
  host: TransportHost<T>,
  call: TransportCall<T, Req, Job, R>,
  request: Req,
): Promise<R> {
  let prepared: CallPlan<Job> | Promise<CallPlan<Job>>;
  try {
    prepared = call.prepare(request);
  } catch (error) {
    return host.refuse(error);
  }
  if (prepared instanceof Promise) {
    return prepared.then(
      ({ job, run }) => host.run((shard, ctx) => call.attempt(shard, ctx, job), run),
      (error: unknown) => host.refuse(error),
    );
  }
  const { job, run } = prepared;
  return host.run((shard, ctx) => call.attempt(shard, ctx, job), run);
}

/**
 * The run options every transport call takes as the core's `run()` does: each one given, and
 * only those (the core checks each name of the object on every run).
 */
export const CALL_RUN_KEYS: readonly string[] = ['signal', 'timeoutMs', 'bytes', 'require', 'meta'];

/**
 * A call's run options: `idempotent`, `key` and `bytes` as the transport reads them from its
 * request, and the {@link CALL_RUN_KEYS} the request gives.
 */
export function callRunOptions(
  request: Pick<RunOptions, 'signal' | 'timeoutMs' | 'bytes' | 'require' | 'meta'>,
  own: { idempotent: boolean; key: RunOptions['key']; bytes: number | undefined },
): RunOptions {
  const options: RunOptions = { idempotent: own.idempotent };
  const bytes = request.bytes ?? own.bytes;
  if (bytes !== undefined) options.bytes = bytes;
  if (own.key !== undefined) options.key = own.key;
  if (request.signal !== undefined) options.signal = request.signal;
  if (request.timeoutMs !== undefined) options.timeoutMs = request.timeoutMs;
  if (request.require !== undefined) options.require = request.require;
  if (request.meta !== undefined) options.meta = request.meta;
  return options;
}

/**
 * How a factory composes a balancer with its transport's own calls: the balancer itself, every
 * method, event and `instanceof Balancer` kept, with each call of `calls` beside its API (a
 * method of that one object, not enumerable). No subclass: the balancer's behaviour is the
 * core's, and the calls reach it only through the host the transport was attached to.
 *
 * @example
 * const transport = new EchoTransport();
 * const echo = withCalls(new Balancer({ shards }, transport), { say: (text: string) => transport.say(text) });
 * await echo.say('hi'); // a run of the balancer, through the transport's host
 */
export function withCalls<B extends object, C extends object>(balancer: B, calls: C): B & C {
  for (const name of Object.keys(calls)) {
    Object.defineProperty(balancer, name, {
      value: (calls as Record<string, unknown>)[name],
      configurable: true,
      writable: true,
      enumerable: false,
    });
  }
  return balancer as B & C;
}

/** The constructor a composed balancer's name stands for (`new HttpBalancer(options)`). */
export interface ComposedConstructor<O, B> {
  new (options: O): B;
}

/**
 * A name for balancers a factory composes: `new Name(options)` builds what the factory does,
 * and `value instanceof Name` holds for each balancer either built (and only for those). The
 * factory is the returned `build`.
 *
 * @example
 * const { Name: EchoBalancer, build: createEchoBalancer } = composedName('EchoBalancer', makeEcho);
 * createEchoBalancer(options) instanceof EchoBalancer; // true
 */
export function composedName<O, B extends object>(
  name: string,
  compose: (options: O) => B,
): { Name: ComposedConstructor<O, B>; build: (options: O) => B } {
  const built = new WeakSet<object>();
  const build = (options: O): B => {
    const balancer = compose(options);
    built.add(balancer);
    return balancer;
  };
  function Composed(this: unknown, options: O): B {
    if (new.target === undefined) {
      throw new TypeError(`Class constructor ${name} cannot be invoked without 'new'`);
    }
    return build(options);
  }
  Object.defineProperty(Composed, 'name', { value: name });
  Object.defineProperty(Composed, Symbol.hasInstance, {
    value: (value: unknown) => typeof value === 'object' && value !== null && built.has(value),
  });
  return { Name: Composed as unknown as ComposedConstructor<O, B>, build };
}
