import { ConfigError } from '../base/errors.js';
import { systemClock, wallClock } from '../base/runtime.js';
import type { ShardSpec, ShardState } from '../base/types.js';
import { bool } from '../base/validate.js';
import { Balancer, type RunContext, type RunOptions } from '../core/balancer.js';
import type { MembershipHooks } from '../core/membership.js';
import { buildsItsOwnCalls } from '../ingest/transport-plan.js';
import type {
  IngestOptions,
  IngestSummary,
  RecordOptions,
  RecordSource,
  RecordWriteStream,
} from '../ingest/types.js';
import type { AttemptBody } from '../transport/body.js';
import { type Compressor, resolveCompression } from '../transport/compression.js';
import { TargetResources } from '../transport/targets.js';
import type { WarmResult } from './connector.js';
import {
  checkRequestShape,
  type Exchange,
  exchangeOf,
  IDEMPOTENT_METHODS,
  SEND_EXCHANGE,
} from './exchange.js';
import {
  type HttpBalancerIngestOptions,
  type HttpBalancerRecordOptions,
  type HttpIngestOptions,
  type HttpRecordOptions,
  httpIngest,
  httpWriteStream,
} from './ingest.js';
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

/** The fields `request()` takes besides the HTTP parts: the run's options. */
const RUN_KEYS: readonly string[] = [
  'compression',
  'key',
  'idempotent',
  'signal',
  'timeoutMs',
  'bytes',
  'require',
  'meta',
];
const NO_KEYS: readonly string[] = [];

/**
 * A `Balancer` over HTTP origins: one undici `Pool` per shard (keep-alive, `connectionsPerShard`
 * connections), opened when the shard joins and closed when it leaves or the balancer closes —
 * through the balancer's membership hooks. Everything a `Balancer` does (run, wrap, events,
 * stats, membership) plus `request()` and `sendTo()`.
 *
 * @example
 * const http = createHttpBalancer({ origins: ['http://10.0.0.1:8080', 'http://10.0.0.2:8080'] });
 * const res = await http.request({ method: 'POST', path: '/ingest', body: JSON.stringify(rows), idempotent: true });
 * await http.close();
 */
export class HttpBalancer extends Balancer<HttpTarget, HttpShardSpec | ShardSpec<HttpTarget>> {
  readonly #http: ResolvedHttpOptions;
  readonly #pools: TargetResources<HttpTarget, ShardPool>;
  readonly #read: ReadSettings;

  constructor(options: HttpBalancerOptions) {
    const { core, http } = resolveHttpOptions(options);
    const clock = core.clock ?? systemClock;
    const pools = new TargetResources<HttpTarget, ShardPool>((target) => {
      const entry = createShardPool(target, http, clock);
      if (http.warm > 0) void warmShard(entry, http.warm);
      return entry;
    }, shutPool);
    const hooks: MembershipHooks<HttpTarget, HttpShardSpec | ShardSpec<HttpTarget>> = pools.hooks({
      prepare: (spec, field) => toShardSpec(field, spec, http.tls !== undefined),
      // Same id, same origin: the shard keeps its figures and its pool.
      sameTarget: (a, b) => a.origin === b.origin,
    });
    super(core, { knownOptions: HTTP_OPTION_KEYS, hooks });
    this.#http = http;
    // zstd's peer loads now, not at the first request (a missing one fails that request).
    http.compression?.ready().catch(noop);
    this.#pools = pools;
    this.#read = {
      bodyLimitBytes: http.bodyLimitBytes,
      loadHeader: http.loadHeader,
      info: {
        maxRetryAfterMs: http.maxRetryAfterMs,
        defaultRetryAfterMs: HTTP_DEFAULTS.defaultRetryAfterMs,
        wallClock,
      },
    };
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
    let compressor: Compressor | undefined;
    try {
      checkRequestShape(request, RUN_KEYS);
      exchange = exchangeOf(request);
      compressor = this.#compressorFor(request, exchange);
      const { method, body } = exchange;
      let idempotent =
        request.idempotent === undefined
          ? IDEMPOTENT_METHODS.has(method)
          : bool('request.idempotent', request.idempotent);
      // A one-shot stream cannot be sent twice: retried only when nothing was sent.
      if (body.stream !== undefined) idempotent = false;
      // Only the options given: the core checks each name of this object on every run.
      runOptions = { idempotent, bytes: request.bytes ?? body.bytes };
      if (request.key !== undefined) runOptions.key = request.key;
      if (request.signal !== undefined) runOptions.signal = request.signal;
      if (request.timeoutMs !== undefined) runOptions.timeoutMs = request.timeoutMs;
      if (request.require !== undefined) runOptions.require = request.require;
      if (request.meta !== undefined) runOptions.meta = request.meta;
    } catch (error) {
      return this.refuse(error);
    }
    if (compressor === undefined) {
      return this.run((shard, ctx) => this.#attempt(shard, ctx, exchange), runOptions);
    }
    // Compressed once, before admission: every attempt sends these bytes, and no attempt's
    // latency (what the picker learns from) includes the compression.
    return compressor.compress(exchange.body.value as string | Uint8Array).then(
      (compressed) => {
        let ex: Exchange;
        try {
          ex = exchange.withBody(compressed, 'request.headers');
        } catch (error) {
          return this.refuse(error);
        }
        return this.run((shard, ctx) => this.#attempt(shard, ctx, ex), runOptions);
      },
      (error: unknown) => this.refuse(error),
    );
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

  /**
   * One HTTP exchange on a shard the balancer already picked — for `run`, `wrap`, `ingest` and
   * `createWriteStream`, whose `send` receives the shard. Status handling is `request()`'s (4xx →
   * `HttpError`, 429 → push-back, …); routing, retries and timeouts are the surrounding run's.
   * Pass the run's `ctx`: the request is aborted when the attempt ends.
   *
   * @example
   * await http.ingest(records, {
   *   send: (shard, record, ctx) => http.sendTo(shard, { method: 'POST', path: '/ingest', body: JSON.stringify(record) }, ctx),
   * });
   */
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

  /** @internal An exchange made elsewhere (an ingestion's batch), on a shard of this balancer. */
  [SEND_EXCHANGE](
    shard: ShardState<HttpTarget>,
    exchange: Exchange,
    ctx: RunContext,
  ): Promise<HttpResponse> {
    return this.#attempt(shard, ctx, exchange);
  }

  /**
   * Sends every record of `source` in batches, one HTTP request per batch (`{ path, encode,
   * batch, failures }`: NDJSON by default), or — given a `send` — as the core `ingest` does.
   * Resolves with the account of every record; see `HttpIngestOptions`.
   *
   * @example
   * const summary = await http.ingest(rows, { path: '/ingest', batch: { maxRecords: 500 } });
   * console.log(summary.written, summary.failed, summary.batches);
   */
  override ingest<Rec>(
    source: RecordSource<Rec>,
    options: HttpBalancerIngestOptions<Rec>,
  ): Promise<IngestSummary<Rec>> {
    return buildsItsOwnCalls(options)
      ? httpIngest(this, source, options as HttpIngestOptions<Rec>)
      : super.ingest(source, options as IngestOptions<HttpTarget, Rec>);
  }

  /**
   * A write stream of records sent in batches, one HTTP request per batch (`{ path, encode,
   * batch, failures }`), or — given a `send` — the core write stream.
   *
   * @example
   * await pipeline(Readable.from(rows), http.createWriteStream({ path: '/ingest' }));
   */
  override createWriteStream<Rec>(options: HttpBalancerRecordOptions<Rec>): RecordWriteStream<Rec> {
    return buildsItsOwnCalls(options)
      ? httpWriteStream(this, options as HttpRecordOptions<Rec>)
      : (super.createWriteStream(
          options as RecordOptions<HttpTarget, Rec>,
        ) as RecordWriteStream<Rec>);
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
          reportedLoad: shard.reportedLoad,
        };
      }),
    };
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

/**
 * Builds an {@link HttpBalancer}. Options: every `Balancer` option plus the transport's (see
 * {@link HttpBalancerOptions}); `maxInFlightPerShard` defaults to `connectionsPerShard ×
 * max(1, pipelining)` so excess runs wait in the balancer, not in one shard's pool, and
 * `timeoutMs` to 60 s so no attempt outlives a trickling shard.
 *
 * @example
 * const http = createHttpBalancer({ origins: ['http://a:8080', 'http://b:8080'], picker: peakEwma() });
 */
export function createHttpBalancer(options: HttpBalancerOptions): HttpBalancer {
  return new HttpBalancer(options);
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
