/**
 * `createHttpBalancer`: a `Balancer` built with the HTTP transport (`http/transport.ts`), its
 * calls (`request`, `sendTo`, `warm`) beside the Balancer's API — composed, not a subclass: no
 * logic here. `ingest`, `createWriteStream` and `stats` are the Balancer's, which uses the
 * transport's batch call and figures; the `HttpBalancer` type names what they take and give.
 */

import type { ShardState } from '../base/types.js';
import { Balancer, type RunContext } from '../core/balancer.js';
import { type ComposedConstructor, composedName, withCalls } from '../core/transport.js';
import type { IngestSummary, RecordSource, RecordWriteStream } from '../ingest/types.js';
import type { WarmResult } from './connector.js';
import type { HttpBalancerIngestOptions, HttpBalancerRecordOptions } from './ingest.js';
import { type HttpSpec, httpTransport } from './transport.js';
import type {
  HttpBalancerOptions,
  HttpBalancerStats,
  HttpRequest,
  HttpResponse,
  HttpTarget,
} from './types.js';

/**
 * A `Balancer` over HTTP origins: one undici `Pool` per shard (keep-alive, `connectionsPerShard`
 * connections), opened when the shard joins and closed when it leaves or the balancer closes —
 * the HTTP transport's, which the balancer is built with. Everything a `Balancer` does (run,
 * wrap, events, stats, membership; `instanceof Balancer` holds) plus `request()`, `sendTo()` and
 * `warm()`. Built by {@link createHttpBalancer} (or `new HttpBalancer(options)`, the same).
 *
 * @example
 * const http = createHttpBalancer({ origins: ['http://10.0.0.1:8080', 'http://10.0.0.2:8080'] });
 * const res = await http.request({ method: 'POST', path: '/ingest', body: JSON.stringify(rows), idempotent: true });
 * await http.close();
 */
export interface HttpBalancer extends Balancer<HttpTarget, HttpSpec>, HttpCalls {
  /**
   * Sends every record of `source` in batches, one HTTP request per batch (`{ path, encode,
   * batch, failures }`: NDJSON by default), or — given a `send` — as the core `ingest` does.
   * Resolves with the account of every record; see `HttpIngestOptions`.
   *
   * @example
   * const summary = await http.ingest(rows, { path: '/ingest', batch: { maxRecords: 500 } });
   * console.log(summary.written, summary.failed, summary.batches);
   */
  ingest<Rec>(
    source: RecordSource<Rec>,
    options: HttpBalancerIngestOptions<Rec>,
  ): Promise<IngestSummary<Rec>>;
  /**
   * A write stream of records sent in batches, one HTTP request per batch (`{ path, encode,
   * batch, failures }`), or — given a `send` — the core write stream.
   *
   * @example
   * await pipeline(Readable.from(rows), http.createWriteStream({ path: '/ingest' }));
   */
  createWriteStream<Rec>(options: HttpBalancerRecordOptions<Rec>): RecordWriteStream<Rec>;
  /** The core's snapshot, each shard extended with its pool's connection figures. */
  stats(): HttpBalancerStats;
}

/** The HTTP transport's own calls, beside the Balancer's API on an {@link HttpBalancer}. */
export interface HttpCalls {
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
  request(request: HttpRequest): Promise<HttpResponse>;

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
  ): Promise<HttpResponse>;

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
  warm(): Promise<WarmResult>;
}

const { Name, build } = composedName('HttpBalancer', (options: HttpBalancerOptions) => {
  const { core, transport } = httpTransport(options);
  const calls: HttpCalls = {
    request: (request) => transport.request(request),
    sendTo: (shard, request, ctx) => transport.sendTo(shard, request, ctx),
    warm: () => transport.warm(),
  };
  return withCalls(new Balancer(core, transport), calls) as HttpBalancer;
});

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
  return build(options);
}

/**
 * `new HttpBalancer(options)` is {@link createHttpBalancer}`(options)`; `instanceof HttpBalancer`
 * holds for every balancer either built.
 */
export const HttpBalancer: ComposedConstructor<HttpBalancerOptions, HttpBalancer> = Name;
