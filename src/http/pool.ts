/**
 * undici's `Pool`, `Client` and connector, loaded without undici's package entry: that entry sets
 * a global dispatcher as a side effect (an undici 7 `Agent` that Node 20's own `fetch` then uses
 * and trips on, TOOLCHAIN trap 4), and a library must not change its host's `fetch`. It also mixes
 * `request` into `Dispatcher.prototype`; requests here go through `pool.dispatch` with a handler
 * of their own (`response-reader.ts`), so no prototype is touched either.
 */
import type { Client as ClientType, Dispatcher, Pool as PoolType } from 'undici';
import buildConnector from 'undici/lib/core/connect.js';
import ClientClass from 'undici/lib/dispatcher/client.js';
import PoolClass from 'undici/lib/dispatcher/pool.js';
import type { Clock } from '../base/types.js';
import { ShardConnector } from './connector.js';
import type { ResolvedHttpOptions } from './options.js';
import type { HttpTarget } from './types.js';

export type Pool = PoolType;
export type PoolOptions = PoolType.Options;
export const Pool: typeof PoolType = PoolClass;

/** A shard's pool and the connector its connections come from (warm sockets, socket options). */
export interface ShardPool {
  pool: Pool;
  connector: ShardConnector;
}

/** The pool of one shard, its connections shaped by the transport's options. */
export function createShardPool(
  target: HttpTarget,
  h: ResolvedHttpOptions,
  clock: Clock,
): ShardPool {
  const tls = h.tls !== undefined && target.origin.startsWith('https:') ? h.tls : undefined;
  const connector = new ShardConnector(
    target.origin,
    buildConnector({
      ...tls,
      keepAlive: h.keepAliveProbeMs > 0,
      keepAliveInitialDelay: h.keepAliveProbeMs,
    }),
    h.noDelay,
  );
  const options: PoolOptions = {
    connections: h.connectionsPerShard,
    pipelining: h.pipelining,
    keepAliveTimeout: h.keepAliveTimeoutMs,
    headersTimeout: h.headersTimeoutMs,
    bodyTimeout: h.bodyTimeoutMs,
    connect: connector.connect,
  };
  // undici's `maxRequestsPerClient` counts per connection (its socket), despite the name, and
  // lets a connection carry one more than it says (it compares before counting): N − 1 carries N.
  // N = 1 is every request with `connection: close`, which the client below sends.
  const maxRequests = h.maxRequestsPerConnection;
  if (maxRequests > 1) options.maxRequestsPerClient = maxRequests - 1;
  // Not undici's `clientTtl`: in 7.30 a pool at its `connections` cap whose clients have all
  // expired queues the request with no client left to send it (nodejs/undici#5144).
  if (h.maxConnectionAgeMs > 0 || maxRequests === 1) {
    const maxAgeMs = maxRequests === 1 ? 0 : h.maxConnectionAgeMs;
    options.factory = (origin, opts) => new AgingClient(origin, opts, maxAgeMs, clock);
  }
  return { pool: new Pool(target.origin, options), connector };
}

/**
 * A `Client` (one connection at a time) that retires its connection once it is `maxAgeMs` old:
 * the next request sent on it carries `connection: close` (undici's `reset`), the connection ends
 * after that response, and the next request opens a fresh one — no request is cut, none is lost.
 * With `maxAgeMs` 0, every request closes its connection.
 *
 * The age is a flag set by one background timer per connection, not a clock read per request:
 * `dispatch` is on every request's path, and a clock read there cost as much as the check.
 */
class AgingClient extends ClientClass {
  /** The current connection has reached its age: the next request asks to close it. */
  #old = false;
  #cancelAge: (() => void) | undefined;
  readonly #maxAgeMs: number;

  constructor(origin: string | URL, options: ClientType.Options, maxAgeMs: number, clock: Clock) {
    super(origin, options);
    this.#maxAgeMs = maxAgeMs;
    if (maxAgeMs === 0) return;
    this.on('connect', () => {
      this.#old = false;
      this.#cancelAge?.();
      this.#cancelAge = clock.setTimer(
        () => {
          this.#cancelAge = undefined;
          this.#old = true;
        },
        maxAgeMs,
        true,
      );
    });
    this.on('disconnect', () => {
      this.#old = false;
      this.#cancelAge?.();
      this.#cancelAge = undefined;
    });
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
    if (this.#maxAgeMs === 0) return super.dispatch({ ...options, reset: true }, handler);
    if (this.#old) {
      // Once: the requests queued behind this one go on the next connection.
      this.#old = false;
      return super.dispatch({ ...options, reset: true }, handler);
    }
    return super.dispatch(options, handler);
  }
}
