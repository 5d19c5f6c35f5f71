/**
 * The HTTP transport: the plug-in an `HttpBalancer` is built with. One undici `Pool` per shard
 * (opened when the shard joins, retired once it has drained, all closed at the balancer's
 * release), its one call (`request()`: a checked exchange, compressed once, sent per attempt),
 * a batch call (`ingest`/`createWriteStream` given a `path`: one request per batch) and each
 * pool's connection figures in `stats()`. It reaches the balancer only through the host the
 * balancer attaches.
 */

import type { RunContext } from '../admission/run.js';
import { ConfigError } from '../base/errors.js';
import { systemClock, wallClock } from '../base/runtime.js';
import type { ShardSpec, ShardState } from '../base/types.js';
import { bool } from '../base/validate.js';
import type { MembershipHooks } from '../core/membership.js';
import type { BalancerOptions } from '../core/options.js';
import {
  type BatchCall,
  CALL_RUN_KEYS,
  type CallPlan,
  callRunOptions,
  callThrough,
  type Transport,
  type TransportCall,
  type TransportHost,
} from '../core/transport.js';
import type { BalancerStats } from '../load/stats.js';
import type { AttemptBody } from '../transport/body.js';
import { type Compressor, resolveCompression } from '../transport/compression.js';
import { TargetResources } from '../transport/targets.js';
import type { WarmResult } from './connector.js';
import { checkRequestShape, type Exchange, exchangeOf, IDEMPOTENT_METHODS } from './exchange.js';
import { httpPlan } from './ingest.js';
import {
  HTTP_DEFAULTS,
  HTTP_OPTION_KEYS,
  type ResolvedHttpOptions,
  resolveHttpOptions,
  toShardSpec,
} from './options.js';
import { createShardPool, type ShardPool } from './pool.js';
import { type ReadSettings, sendExchange } from './response-reader.js';
import type {
  HttpBalancerOptions,
  HttpBalancerStats,
  HttpRequest,
  HttpResponse,
  HttpShardSpec,
  HttpTarget,
} from './types.js';

/** What an HTTP balancer's membership takes: an origin, an HTTP spec, or a core spec. */
export type HttpSpec = HttpShardSpec | ShardSpec<HttpTarget>;

/** A context for `sendTo` without one: never aborts. */
const NO_CONTEXT: RunContext = {
  attempt: 1,
  get signal() {
    return new AbortController().signal;
  },
  onAbort: () => noop,
  reportSent: noop,
  reportReceived: noop,
};

/** The fields `request()` takes besides the HTTP parts: the run's options, and `compression`. */
const RUN_KEYS: readonly string[] = ['compression', 'key', 'idempotent', ...CALL_RUN_KEYS];
const NO_KEYS: readonly string[] = [];

/**
 * Checks the transport's options, and returns the core's (for the `Balancer`) with the
 * transport built from the rest.
 */
export function httpTransport(options: HttpBalancerOptions): {
  core: BalancerOptions<HttpTarget>;
  transport: HttpTransport;
} {
  const { core, http } = resolveHttpOptions(options);
  return { core, transport: new HttpTransport(http, core) };
}

export class HttpTransport implements Transport<HttpTarget, HttpSpec> {
  readonly knownOptions = HTTP_OPTION_KEYS;
  readonly hooks: MembershipHooks<HttpTarget, HttpSpec>;
  readonly batch: BatchCall<HttpTarget>;
  readonly #http: ResolvedHttpOptions;
  readonly #pools: TargetResources<HttpTarget, ShardPool>;
  readonly #read: ReadSettings;
  readonly #request: TransportCall<HttpTarget, HttpRequest, Exchange, HttpResponse>;
  #host: TransportHost<HttpTarget> | undefined;

  constructor(http: ResolvedHttpOptions, core: BalancerOptions<HttpTarget>) {
    this.#http = http;
    // The balancer's clock (its default too): pools time their connections' age on it.
    const clock = core.clock ?? systemClock;
    this.#pools = new TargetResources<HttpTarget, ShardPool>((target) => {
      const entry = createShardPool(target, http, clock);
      if (http.warm > 0) void warmShard(entry, http.warm);
      return entry;
    }, shutPool);
    this.hooks = this.#pools.hooks<HttpSpec>({
      prepare: (spec, field) => toShardSpec(field, spec, http.tls !== undefined),
      // Same id, same origin: the shard keeps its figures and its pool.
      sameTarget: (a, b) => a.origin === b.origin,
    });
    this.#read = {
      bodyLimitBytes: http.bodyLimitBytes,
      loadHeader: http.loadHeader,
      info: {
        maxRetryAfterMs: http.maxRetryAfterMs,
        defaultRetryAfterMs: HTTP_DEFAULTS.defaultRetryAfterMs,
        wallClock,
      },
    };
    this.#request = {
      prepare: (request) => this.#prepare(request),
      attempt: (shard, ctx, exchange) => this.#attempt(shard, ctx, exchange),
    };
    const send = (shard: ShardState<HttpTarget>, exchange: Exchange, ctx: RunContext) =>
      this.#attempt(shard, ctx, exchange);
    this.batch = {
      name: 'http',
      plan: (runner, field, options, extra) => httpPlan(runner, send, field, options, extra),
    };
    // zstd's peer loads now, not at the first request (a missing one fails that request).
    http.compression?.ready().catch(noop);
  }

  attach(host: TransportHost<HttpTarget>): void {
    this.#host = host;
  }

  /** `HttpBalancer.request()`: one exchange, run on the shard the balancer picks. */
  request(request: HttpRequest): Promise<HttpResponse> {
    return callThrough(this.#attached(), this.#request, request);
  }

  /** `HttpBalancer.sendTo()`: one exchange on a shard the balancer already picked. */
  sendTo(
    shard: ShardState<HttpTarget>,
    request: Pick<HttpRequest, 'method' | 'path' | 'headers' | 'body' | 'sign'>,
    ctx?: RunContext,
  ): Promise<HttpResponse> {
    let exchange: Exchange;
    try {
      checkRequestShape(request, NO_KEYS);
      if (this.#pools.get(shard?.target) === undefined) {
        throw new ConfigError(
          'shard',
          'must be a shard of this balancer (the one `send` was given)',
          shard?.id,
        );
      }
      if (
        ctx !== undefined &&
        (typeof ctx !== 'object' || ctx === null || typeof ctx.onAbort !== 'function')
      ) {
        throw new ConfigError('ctx', 'must be the RunContext the run gave `send` (or absent)', ctx);
      }
      exchange = exchangeOf(request);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#attempt(shard, ctx ?? NO_CONTEXT, exchange);
  }

  /** `HttpBalancer.warm()`: every shard's pool opened to `warm` connections. */
  async warm(): Promise<WarmResult> {
    const results = await Promise.all(
      this.#pools.values().map((entry) => warmShard(entry, this.#http.warm)),
    );
    const total: WarmResult = { opened: 0, failed: 0 };
    for (const r of results) {
      total.opened += r.opened;
      total.failed += r.failed;
    }
    return total;
  }

  /** The core's snapshot, each shard extended with its pool's connection figures. */
  stats(base: BalancerStats, shards: readonly ShardState<HttpTarget>[]): HttpBalancerStats {
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
          reportedLoad: shard.reportedLoad,
        };
      }),
    };
  }

  /** Every pool closed (drained, or destroyed without drain): the balancer has closed. */
  release(drain: boolean): Promise<void> {
    return this.#pools.close(drain);
  }

  #attached(): TransportHost<HttpTarget> {
    if (this.#host === undefined) throw new Error('the HTTP transport has no balancer yet');
    return this.#host;
  }

  /**
   * A request checked into its exchange and its run's options; with a compressor, the body is
   * compressed once, before admission: every attempt sends these bytes, and no attempt's
   * latency (what the picker learns from) includes the compression.
   */
  #prepare(request: HttpRequest): CallPlan<Exchange> | Promise<CallPlan<Exchange>> {
    checkRequestShape(request, RUN_KEYS);
    const exchange = exchangeOf(request);
    const compressor = this.#compressorFor(request, exchange);
    const { method, body } = exchange;
    let idempotent =
      request.idempotent === undefined
        ? IDEMPOTENT_METHODS.has(method)
        : bool('request.idempotent', request.idempotent);
    // A one-shot stream cannot be sent twice: retried only when nothing was sent.
    if (body.stream !== undefined) idempotent = false;
    const run = callRunOptions(request, { idempotent, key: request.key, bytes: body.bytes });
    if (compressor === undefined) return { job: exchange, run };
    return compressor.compress(body.value as string | Uint8Array).then((compressed) => ({
      job: exchange.withBody(compressed, 'request.headers'),
      run,
    }));
  }

  /**
   * The compressor for a request's body: its own `compression`, else the balancer's; none for a
   * body that is empty or already compressed. A stream or a body function cannot be compressed
   * once: a `ConfigError` when the request asks, sent as it is under the balancer's default.
   */
  #compressorFor(request: HttpRequest, exchange: Exchange): Compressor | undefined {
    const own = request.compression;
    const compressor =
      own === undefined ? this.#http.compression : resolveCompression('request.compression', own);
    const { value, compressed } = exchange.body;
    if (compressor === undefined || compressed !== undefined || value === null) return undefined;
    if (value !== undefined) return compressor;
    if (own === undefined) return undefined;
    throw new ConfigError(
      'request.compression',
      'applies to a string or Uint8Array body (a stream or a body function is sent as it is: compress it yourself, or pass a Compressed body)',
      undefined,
      { given: false },
    );
  }

  #attempt(shard: ShardState<HttpTarget>, ctx: RunContext, ex: Exchange): Promise<HttpResponse> {
    const pool = this.#pools.get(shard.target)?.pool;
    if (pool === undefined) {
      return Promise.reject(new Error(`shard "${shard.id}" has no connection pool`));
    }
    let body: AttemptBody;
    try {
      body = ex.attemptBody();
    } catch (error) {
      return Promise.reject(error);
    }
    const { path, method, source } = ex;
    if (source === undefined) {
      const options = { path, method: method as 'GET', headers: ex.headers, body };
      return sendExchange(pool, this.#read, shard, ex, options, ctx, undefined);
    }
    return source
      .forAttempt(shard, ctx.attempt, method, path, body, ex.encoding)
      .then(({ headers, body, given }) => {
        const options = { path, method: method as 'GET', headers, body };
        return sendExchange(pool, this.#read, shard, ex, options, ctx, given);
      });
  }
}

function warmShard(entry: ShardPool, warm: number): Promise<WarmResult> {
  const connected = entry.pool.destroyed ? 0 : entry.pool.stats.connected;
  return entry.connector.warm(warm, connected);
}

function shutPool({ pool, connector }: ShardPool, drain: boolean): Promise<void> {
  connector.close();
  if (pool.destroyed) return Promise.resolve();
  if (drain && !pool.closed) return pool.close().catch(noop);
  return pool.destroy().catch(noop);
}

function noop(): void {}
