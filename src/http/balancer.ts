import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { Balancer, type RunContext, type RunOptions } from '../balancer.js';
import { ConfigError } from '../errors.js';
import { wallClock } from '../runtime.js';
import type { ShardSpec, ShardState } from '../types.js';
import { bool, checkKnownKeys, checkObject } from '../validate.js';
import { type PreparedBody, prepareBody, readBody, toStream, untouched } from './body.js';
import { annotateTransportError, type ExchangeInfo, statusError } from './classify.js';
import type { WarmResult } from './connector.js';
import { BodyTooLargeError } from './errors.js';
import { feedLoadMetrics, LOAD_METRICS_HEADER, parseLoadMetrics } from './load-metrics.js';
import {
  HTTP_DEFAULTS,
  HTTP_OPTION_KEYS,
  type ResolvedHttpOptions,
  resolveHttpOptions,
  toShardSpec,
} from './options.js';
import { createShardPool, type PoolResponse, poolRequest, type ShardPool } from './pool.js';
import { feedReportedLoad, parseLoadHeader, reportedLoadOf } from './reported-load.js';
import { Response } from './response.js';
import type {
  HttpBalancerOptions,
  HttpBalancerStats,
  HttpRequest,
  HttpResponse,
  HttpShardSpec,
  HttpTarget,
} from './types.js';

/** A context for `sendTo` without one: never aborts. */
const NO_CONTEXT: RunContext = {
  attempt: 1,
  get signal() {
    return new AbortController().signal;
  },
  onAbort() {},
};

/** Checks the HTTP parts of a request and prepares its body. */
function exchangeOf(request: Pick<HttpRequest, 'method' | 'path' | 'headers' | 'body'>): Exchange {
  const method = request.method === undefined ? 'GET' : checkMethod(request.method).toUpperCase();
  const path = request.path === undefined ? '/' : checkPath(request.path);
  if (request.headers !== undefined) checkObject('request.headers', request.headers);
  const body = prepareBody(request.body);
  if (body === undefined) {
    throw new ConfigError(
      'request.body',
      'must be a string, a Uint8Array, a Readable, an async iterable, or a function returning one',
      request.body,
    );
  }
  return new Exchange(method, path, request.headers, body);
}

const REQUEST_KEYS = [
  'key',
  'method',
  'path',
  'headers',
  'body',
  'idempotent',
  'signal',
  'timeoutMs',
  'bytes',
  'require',
  'meta',
];

/** Methods that RFC 9110 §9.2.2 calls idempotent (and safe ones): retried by default. */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE']);

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;

/** One request across its attempts. */
class Exchange {
  /** The one-shot stream was handed to undici by an earlier attempt. */
  streamSent = false;
  constructor(
    readonly method: string,
    readonly path: string,
    readonly headers: Record<string, string | string[] | undefined> | undefined,
    readonly body: PreparedBody,
  ) {}
}

/**
 * A `Balancer` over HTTP origins: one undici `Pool` per shard (keep-alive, `connectionsPerShard`
 * connections), created when the shard joins and closed when it leaves or the balancer closes.
 * Everything a `Balancer` does (run, wrap, events, stats, membership) plus `request()`.
 *
 * @example
 * const http = createHttpBalancer({ origins: ['http://10.0.0.1:8080', 'http://10.0.0.2:8080'] });
 * const res = await http.request({ method: 'POST', path: '/ingest', body: JSON.stringify(rows), idempotent: true });
 * await http.close();
 */
export class HttpBalancer extends Balancer<HttpTarget> {
  readonly #http: ResolvedHttpOptions;
  /** Keyed by target: the core keeps a shard's target object across `setShards` when unchanged. */
  readonly #pools = new Map<HttpTarget, ShardPool>();
  /** Pools of removed shards, closing. */
  readonly #retiring = new Set<Promise<void>>();
  readonly #info: Omit<ExchangeInfo, 'shardId' | 'method' | 'path'>;

  constructor(options: HttpBalancerOptions) {
    const { core, http } = resolveHttpOptions(options);
    super(core, HTTP_OPTION_KEYS);
    this.#http = http;
    this.#info = {
      maxRetryAfterMs: http.maxRetryAfterMs,
      defaultRetryAfterMs: HTTP_DEFAULTS.defaultRetryAfterMs,
      wallClock,
    };
    for (const shard of this.shards) this.#pools.set(shard.target, this.#newPool(shard.target));
  }

  /**
   * Sends one HTTP request to a shard the picker chooses, retrying on others as the run's
   * idempotency allows. Resolves with the whole response (status < 400); rejects with
   * `HttpError` (4xx, or 5xx after retries), `PushBackError` (429, 503 + Retry-After),
   * `BodyTooLargeError`, undici's connection errors, or the core's errors
   * (`RetriesExhaustedError` holding every attempt, `TimeoutError`, …).
   *
   * @example
   * const res = await http.request({ method: 'PUT', path: `/items/${id}`, body: payload, headers: { 'content-type': 'application/json' } });
   * console.log(res.statusCode, res.shardId, res.json());
   */
  request(request: HttpRequest): Promise<HttpResponse> {
    let exchange: Exchange;
    let runOptions: RunOptions;
    try {
      checkObject('request', request);
      checkKnownKeys('request', request, REQUEST_KEYS);
      exchange = exchangeOf(request);
      const { method, body } = exchange;
      let idempotent =
        request.idempotent === undefined
          ? IDEMPOTENT_METHODS.has(method)
          : bool('request.idempotent', request.idempotent);
      // A one-shot stream cannot be sent twice: retried only when nothing was sent.
      if (body.stream !== undefined) idempotent = false;
      runOptions = {
        key: request.key,
        signal: request.signal,
        timeoutMs: request.timeoutMs,
        idempotent,
        bytes: request.bytes ?? body.bytes,
      };
      if (request.require !== undefined) runOptions.require = request.require;
      if (request.meta !== undefined) runOptions.meta = request.meta;
    } catch (error) {
      return Promise.reject(error);
    }
    return this.run((shard, ctx) => this.#attempt(shard, ctx, exchange), runOptions);
  }

  /**
   * One HTTP exchange on a shard the balancer already picked — for `run`, `wrap`, `ingest` and
   * `createWriteStream`, whose `send` receives the shard. Status handling is `request()`'s (4xx →
   * `HttpError`, 429 → push-back, …); routing, retries and timeouts are the surrounding run's.
   *
   * @example
   * await http.ingest(records, {
   *   send: (shard, record, ctx) => http.sendTo(shard, { method: 'POST', path: '/ingest', body: JSON.stringify(record) }, ctx),
   * });
   */
  sendTo(
    shard: ShardState<HttpTarget>,
    request: Pick<HttpRequest, 'method' | 'path' | 'headers' | 'body'>,
    ctx?: RunContext,
  ): Promise<HttpResponse> {
    let exchange: Exchange;
    try {
      checkObject('request', request);
      checkKnownKeys('request', request, ['method', 'path', 'headers', 'body']);
      if (!this.#pools.has(shard?.target)) {
        throw new ConfigError(
          'shard',
          'must be a shard of this balancer (the one `send` was given)',
          shard?.id,
        );
      }
      exchange = exchangeOf(request);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#attempt(shard, ctx ?? NO_CONTEXT, exchange);
  }

  // ——— membership: a pool per shard ———

  /** Adds a shard (an HTTP spec: `target` may be an origin string) and its pool. */
  override addShard(spec: HttpShardSpec | ShardSpec<HttpTarget>): void {
    const core = toShardSpec('shard', spec);
    // The pool exists before the core may start a run on the shard (it pumps the queue).
    const pool = this.#newPool(core.target);
    this.#pools.set(core.target, pool);
    try {
      super.addShard(core);
    } catch (error) {
      this.#pools.delete(core.target);
      void shutPool(pool, false);
      throw error;
    }
  }

  /** Removes a shard; its pool closes once its in-flight calls are over (destroyed without drain). */
  override removeShard(id: string, options: { drain?: boolean } = {}): Promise<void> {
    const shard = this.shards.find((s) => s.id === id);
    const done = super.removeShard(id, options);
    if (shard === undefined) return done;
    const drain = options.drain !== false;
    return done.then(() => this.#retire(shard.target, drain));
  }

  /**
   * Makes the membership exactly `specs` (diffed by id; a shard whose origin is unchanged keeps
   * its load figures and its pool). Resolves when removed shards have drained and their pools
   * have closed.
   */
  override setShards(specs: Array<HttpShardSpec | ShardSpec<HttpTarget>>): Promise<void> {
    if (!Array.isArray(specs)) return super.setShards(specs);
    const current = new Map(this.shards.map((s) => [s.id, s.target]));
    const core = specs.map((spec, i) => {
      const next = toShardSpec(`shards[${i}]`, spec);
      const old = current.get(next.id);
      // Same id, same origin: hand the core the very target object, so it keeps the shard.
      if (old !== undefined && old.origin === next.target.origin) next.target = old;
      return next;
    });
    const fresh: HttpTarget[] = [];
    for (const spec of core) {
      if (!this.#pools.has(spec.target)) {
        this.#pools.set(spec.target, this.#newPool(spec.target));
        fresh.push(spec.target);
      }
    }
    const before = this.shards;
    let done: Promise<void>;
    try {
      done = super.setShards(core);
    } catch (error) {
      for (const target of fresh) {
        const pool = this.#pools.get(target);
        if (pool !== undefined) void shutPool(pool, false);
        this.#pools.delete(target);
      }
      throw error;
    }
    const kept = new Set(this.shards.map((s) => s.target));
    const gone = before.filter((s) => !kept.has(s.target));
    return done.then(() => Promise.all(gone.map((s) => this.#retire(s.target, true)))).then(noop);
  }

  // ——— lifecycle and figures ———

  /**
   * Stops admitting; with `drain` (default true) waits for every admitted run, then closes the
   * pools (their idle keep-alive connections end); without, aborts runs and destroys the pools.
   */
  override async close(options: { drain?: boolean } = {}): Promise<void> {
    await super.close(options);
    const drain = options.drain !== false;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all([...pools.map((pool) => shutPool(pool, drain)), ...this.#retiring]);
  }

  /**
   * Opens connections until every shard has `warm` of them (the option; 0 opens none), sending
   * no request, and resolves when each has opened or failed — counted, never thrown: a shard that
   * cannot be reached fails its first request as it would have. Warming starts by itself at
   * creation and when a shard joins; this also waits for that. Resolves at once without `warm`.
   *
   * @example
   * const http = createHttpBalancer({ origins, warm: 4 });
   * const { opened, failed } = await http.warm(); // 4 connections per shard, before any request
   */
  async warm(): Promise<WarmResult> {
    const results = await Promise.all(
      [...this.#pools.values()].map((entry) => this.#warmShard(entry)),
    );
    const total: WarmResult = { opened: 0, failed: 0 };
    for (const r of results) {
      total.opened += r.opened;
      total.failed += r.failed;
    }
    return total;
  }

  /** The core's snapshot, each shard extended with its pool's connection figures. */
  override stats(): HttpBalancerStats {
    const base = super.stats();
    const shards = this.shards;
    return {
      ...base,
      shards: base.shards.map((s, i) => {
        const shard = shards[i]!;
        const entry = this.#pools.get(shard.target);
        const ps = entry === undefined || entry.pool.destroyed ? undefined : entry.pool.stats;
        return {
          ...s,
          connections: ps === undefined ? 0 : ps.connected + entry!.connector.idle,
          pending: ps?.pending ?? 0,
          running: ps?.running ?? 0,
          reportedLoad: reportedLoadOf(shard),
        };
      }),
    };
  }

  // ——— internals ———

  #newPool(target: HttpTarget): ShardPool {
    const entry = createShardPool(target, this.#http, this.clock);
    if (this.#http.warm > 0) void this.#warmShard(entry);
    return entry;
  }

  #warmShard(entry: ShardPool): Promise<WarmResult> {
    const connected = entry.pool.destroyed ? 0 : entry.pool.stats.connected;
    return entry.connector.warm(this.#http.warm, connected);
  }

  #retire(target: HttpTarget, drain: boolean): Promise<void> {
    const pool = this.#pools.get(target);
    if (pool === undefined) return Promise.resolve();
    this.#pools.delete(target);
    const closing = shutPool(pool, drain);
    this.#retiring.add(closing);
    return closing.finally(() => this.#retiring.delete(closing));
  }

  async #attempt(
    shard: ShardState<HttpTarget>,
    ctx: RunContext,
    ex: Exchange,
  ): Promise<HttpResponse> {
    const pool = this.#pools.get(shard.target)?.pool;
    if (pool === undefined) throw new Error(`shard "${shard.id}" has no connection pool`);
    const body = this.#bodyFor(ex);
    let res: PoolResponse;
    try {
      res = await poolRequest(pool, {
        method: ex.method as 'GET',
        path: ex.path,
        headers: ex.headers,
        body,
        signal: abortSignalFor(ctx),
      });
    } catch (error) {
      throw annotateTransportError(error);
    }
    const { statusCode, headers } = res;
    const limit = this.#http.bodyLimitBytes;
    const declared = Number(headers['content-length']);
    let data: Buffer | undefined;
    if (declared > limit) res.body.on('error', noop).destroy();
    else data = await readBody(res.body, limit);
    if (data === undefined) {
      throw new BodyTooLargeError(
        { statusCode, shardId: shard.id, method: ex.method, path: ex.path },
        limit,
      );
    }
    const loadHeader = this.#http.loadHeader;
    if (loadHeader !== undefined) {
      const load = parseLoadHeader(headers[loadHeader]);
      if (load !== undefined) feedReportedLoad(shard, load);
    }
    const orca = headers[LOAD_METRICS_HEADER];
    if (orca !== undefined) {
      const report = parseLoadMetrics(orca);
      if (report !== undefined) feedLoadMetrics(shard, report);
    }
    if (statusCode >= 400) {
      throw statusError(statusCode, headers, data, {
        ...this.#info,
        shardId: shard.id,
        method: ex.method,
        path: ex.path,
      });
    }
    return new Response(statusCode, headers, data, shard.id);
  }

  #bodyFor(ex: Exchange): string | Uint8Array | Readable | null {
    const prepared = ex.body;
    if (prepared.factory !== undefined) {
      const value = prepared.factory();
      if (typeof value === 'string' || value instanceof Uint8Array) return value;
      const stream = toStream(value);
      if (stream === undefined) {
        throw new ConfigError(
          'request.body()',
          'must return a string, a Uint8Array, a Readable or an async iterable',
          value,
        );
      }
      return stream;
    }
    const stream = prepared.stream;
    if (stream === undefined) return prepared.value;
    if (ex.streamSent && !untouched(stream)) {
      throw new ConfigError(
        'request.body',
        'is a one-shot stream that an earlier attempt consumed; pass a function returning a fresh body to make the request replayable',
        undefined,
        { given: false },
      );
    }
    ex.streamSent = true;
    return stream;
  }
}

/**
 * Builds an {@link HttpBalancer}. Options: every `Balancer` option plus the transport's (see
 * {@link HttpBalancerOptions}); `maxInFlightPerShard` defaults to `connectionsPerShard ×
 * max(1, pipelining)` so excess runs wait in the balancer, not in one shard's pool.
 *
 * @example
 * const http = createHttpBalancer({ origins: ['http://a:8080', 'http://b:8080'], picker: peakEwma() });
 */
export function createHttpBalancer(options: HttpBalancerOptions): HttpBalancer {
  return new HttpBalancer(options);
}

function checkMethod(value: unknown): string {
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new ConfigError('request.method', 'must be an HTTP method name', value);
  }
  return value;
}

function checkPath(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/')) {
    throw new ConfigError('request.path', 'must be a string starting with "/"', value);
  }
  return value;
}

function shutPool({ pool, connector }: ShardPool, drain: boolean): Promise<void> {
  connector.close();
  if (pool.destroyed) return Promise.resolve();
  if (drain && !pool.closed) return pool.close().catch(ignore);
  return pool.destroy().catch(ignore);
}

/**
 * What undici listens to for the attempt's abort. An `AbortSignal` listener costs ~15–20 µs per
 * request on Node 20 (measured in bench/http-throughput: a quarter of the client's CPU per
 * request), so when the core offers `ctx.onAbort` (a plain callback, the proposed hook) undici
 * gets a bare `EventEmitter` instead; otherwise `ctx.signal`.
 */
function abortSignalFor(ctx: RunContext): AbortSignal | EventEmitter {
  const onAbort = (ctx as RunContext & AbortHook).onAbort;
  if (typeof onAbort !== 'function') return ctx.signal;
  const emitter = new EventEmitter();
  onAbort.call(ctx, () => emitter.emit('abort'));
  return emitter;
}

interface AbortHook {
  onAbort?: (listener: (reason: unknown) => void) => void;
}

function noop(): void {}
function ignore(): void {}
