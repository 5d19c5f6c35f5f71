import type { Readable } from 'node:stream';
import type { Key, ShardState } from '../base/types.js';
import type { BalancerStats, ShardStats } from '../core/balancer.js';
import type { BalancerOptions } from '../core/options.js';
import type { Requirement } from '../routing/requirement.js';
import type { Compressed, CompressionOption } from '../transport/compression.js';

/** What an HTTP shard is: its origin. Frozen; `shard.target` in pickers and events. */
export interface HttpTarget {
  /** `scheme://host[:port]`, normalised by `URL` (default ports dropped, host lower-cased). */
  readonly origin: string;
}

/** A shard spec for `createHttpBalancer({ shards })`, `addShard` and `setShards`. */
export interface HttpShardSpec {
  id: string;
  /** An origin URL (`'http://10.0.0.1:8080'`) or `{ origin }`. No path, query, or credentials. */
  target: string | { origin: string };
  weight?: number;
  zone?: string;
  labels?: Record<string, string>;
}

/** TLS settings for `https:` origins, passed to undici's `connect` options. */
export interface HttpTlsOptions {
  /** Trusted CA certificates (PEM), instead of Node's bundled list. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Client certificate (PEM), for mutual TLS. */
  cert?: string | Buffer | Array<string | Buffer>;
  /** Client private key (PEM), for mutual TLS. */
  key?: string | Buffer | Array<string | Buffer>;
  /** Verify the server's certificate (default true). */
  rejectUnauthorized?: boolean;
  /** SNI server name and the name the certificate is checked against (default: the host). */
  servername?: string;
}

/**
 * Options of {@link createHttpBalancer}: every `Balancer` option (except `shards`, given as
 * `origins` or HTTP shard specs) plus the transport's.
 */
export interface HttpBalancerOptions extends Omit<BalancerOptions<HttpTarget>, 'shards'> {
  /** Shard origins; each shard's id is its normalised origin. Exactly one of `origins`/`shards`. */
  origins?: string[];
  /** Full shard specs (ids, weights, zones, labels). Exactly one of `origins`/`shards`. */
  shards?: HttpShardSpec[];
  /** Connections one shard's pool may open (default 8). */
  connectionsPerShard?: number;
  /**
   * Requests per connection at once (default 1: keep-alive without HTTP/1.1 pipelining; 0 turns
   * keep-alive off, one connection per request).
   */
  pipelining?: number;
  /** Idle time before a kept-alive connection is closed, ms, when the server gives no hint (default 4 000). */
  keepAliveTimeoutMs?: number;
  /** Wait for response headers, ms; 0 = none (default 30 000). */
  headersTimeoutMs?: number;
  /** Longest silence while reading a response body, ms; 0 = none (default 30 000). */
  bodyTimeoutMs?: number;
  /** Largest response body read into memory, bytes (default 16 MiB); past it `BodyTooLargeError`. */
  bodyLimitBytes?: number;
  /** TLS settings for `https:` origins. */
  tls?: HttpTlsOptions;
  /**
   * Response header carrying the shard's own load figure, a number ≥ 0 (default `'x-shard-load'`),
   * or `false` to ignore it.
   */
  loadHeader?: string | false;
  /** Cap on a `Retry-After` wait, ms (default 60 000): a shard cannot park a run for an hour. */
  maxRetryAfterMs?: number;
  /**
   * Connections per shard opened ahead of the first request (default 0; at most
   * `connectionsPerShard`): at creation, for every shard added later, and on `warm()`. Only the
   * TCP (and TLS) handshake is made — no request is sent, so the shard's application sees
   * nothing. The pool's first connections are taken from these, so the first requests pay no
   * handshake. A warm connection that fails to open is counted by `warm()`, never thrown; one
   * that the server closes before use is dropped. `await http.warm()` waits for them.
   */
  warm?: number;
  /**
   * TCP_NODELAY on every connection (default true): a request's last segment leaves at once
   * instead of waiting (Nagle) for the server's delayed ACK of the previous one — up to 40 ms on
   * Linux for a body written in two pieces. undici always sets it; `false` clears it again.
   */
  noDelay?: boolean;
  /**
   * Idle time before TCP keep-alive probes start on a connection, ms (default 30 000; 0 turns
   * probes off). They find a peer that vanished without closing (a replica killed, a NAT or load
   * balancer entry expired) while a long request waits, instead of waiting for `headersTimeoutMs`.
   * 30 s stays under the idle timeouts of common middleboxes (AWS NLB 350 s, Azure LB 4 min).
   */
  keepAliveProbeMs?: number;
  /**
   * Requests one connection carries before it is closed and replaced (default 0 = unlimited).
   * A count makes rotation follow the request rate: at 5 000 requests/s a cap of 1 000 is five
   * handshakes a second. Prefer `maxConnectionAgeMs`; use this where a server wants a count.
   */
  maxRequestsPerConnection?: number;
  /**
   * Age after which a connection is retired, ms (default 300 000 = 5 min; 0 = never): the next
   * request on it asks the server to close (`connection: close`), and the request after opens a
   * new connection. Behind a layer-4 load balancer or a Kubernetes Service, a keep-alive
   * connection stays on the replica it first reached; with a cap, replicas added by a scale-out
   * get their share within this time. The cost is one handshake per connection per 5 minutes.
   */
  maxConnectionAgeMs?: number;
  /**
   * Compresses `request()` bodies given as text or bytes (`'gzip'`, `'zstd'`, `'br'`, or `{ codec,
   * level?, minBytes? }`; default none). A request's own `compression` wins (`false` turns it
   * off for that request). See docs/bandwidth.md.
   */
  compression?: CompressionOption | false;
}

/**
 * A request body: bytes, text, a stream, an async iterable of chunks — or a function returning a
 * fresh body per attempt. A stream or iterable can be sent once: its run is not idempotent (it is
 * retried only when the error proves nothing was sent, and then only if the stream is untouched).
 * Give a function to make a streamed request replayable.
 */
export type HttpBodyValue = string | Uint8Array | Readable | AsyncIterable<Uint8Array | string>;
export type HttpBody = HttpBodyValue | Compressed | (() => HttpBodyValue) | null | undefined;

/** Request headers: name → value (or values). */
export type HttpHeaders = Record<string, string | string[] | undefined>;

/**
 * Headers made for each attempt: called once per attempt, just before it is sent, with the shard
 * it goes to and its number (1 for the first try) — a bearer token that expires mid-load is
 * fetched fresh for a retry. Its values are secrets: never copied into errors, events or stats.
 *
 * @example
 * const headers: HeadersFn = async (shard) => ({ authorization: `Bearer ${await tokens.for(shard.id)}` });
 */
export type HeadersFn = (
  shard: ShardState<HttpTarget>,
  attempt: number,
) => HttpHeaders | Promise<HttpHeaders>;

/** What a `sign` hook sees of an attempt: everything that is sent, as it is sent. */
export interface SignRequest {
  readonly method: string;
  /** The shard's origin and the path (query included). */
  readonly url: string;
  readonly path: string;
  /** The attempt's headers (`content-encoding` included): a copy; change it to no effect. */
  readonly headers: Readonly<HttpHeaders>;
  /**
   * The body bytes exactly as sent (after compression; text as its UTF-8 bytes; empty for no
   * body), or undefined for a stream, which cannot be read ahead.
   */
  readonly body: Uint8Array | undefined;
  readonly shardId: string;
  readonly attempt: number;
}

/**
 * Signs an attempt (AWS SigV4, an HMAC of the body …): returns the headers to add to it (a name
 * already set, in any letter case, is replaced), or undefined. Called once per attempt, after
 * the headers and the compression, so what it hashes is what is sent. Its values are secrets.
 *
 * @example
 * const sign: SignHook = ({ body }) => ({ 'x-signature': createHmac('sha256', key).update(body ?? '').digest('hex') });
 */
export type SignHook = (
  request: SignRequest,
) => HttpHeaders | undefined | Promise<HttpHeaders | undefined>;

/** One HTTP call through the balancer. */
export interface HttpRequest {
  /** Routing key for hashing pickers. */
  key?: Key;
  /** Default `'GET'`. */
  method?: string;
  /** Path and query, starting with `/` (default `'/'`). */
  path?: string;
  /**
   * Request headers, or a function making them for each attempt (see {@link HeadersFn}). Never
   * copied into errors, events or stats.
   */
  headers?: HttpHeaders | HeadersFn;
  /**
   * A text, bytes, stream or iterable body; a function making one per attempt; or a
   * `Compressed` body (from a compressor), sent with its `content-encoding`.
   */
  body?: HttpBody;
  /**
   * Compresses a text or bytes body once, before the first attempt; every retry sends the same
   * bytes, with `content-encoding` (default: the balancer's `compression`; `false`: none). Bodies
   * shorter than `minBytes` (1 KiB) are sent as they are.
   */
  compression?: CompressionOption | false;
  /** Signs each attempt from its final headers and body bytes (see {@link SignHook}). */
  sign?: SignHook;
  /**
   * May be repeated on another shard (default: true for GET, HEAD, PUT, DELETE, OPTIONS; false
   * for POST, PATCH and others; always false for a one-shot stream body).
   */
  idempotent?: boolean;
  /** Aborts the whole request, retries included. */
  signal?: AbortSignal;
  /** Bound on one attempt, ms (default: the balancer's `timeoutMs`). */
  timeoutMs?: number;
  /** Bytes the request carries, for byte-aware load (default: the body's length when known). */
  bytes?: number;
  /** A hard routing rule on shard labels (see `RunOptions.require`): no attempt goes elsewhere. */
  require?: Requirement;
  /** What the balancer's `policy` derives the rule from. */
  meta?: unknown;
}

/** A response read in full (bounded by `bodyLimitBytes`). */
export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The shard that answered. */
  shardId: string;
  /** The body decoded as UTF-8. */
  text(): string;
  /** The body parsed as JSON. */
  json<J = unknown>(): J;
}

/** One shard in `HttpBalancer.stats()`: the core figures plus its connection pool's. */
export interface HttpShardStats extends ShardStats {
  /** Open connections. */
  connections: number;
  /** Requests waiting in the pool for a connection or queued on one. */
  pending: number;
  /** Requests being sent or answered. */
  running: number;
  /** The last load the shard reported in its load header, if any. */
  reportedLoad: number | undefined;
}

export interface HttpBalancerStats extends BalancerStats {
  shards: HttpShardStats[];
}
