/**
 * undici's `Pool` and its `request`, loaded without undici's package entry: that entry sets a
 * global dispatcher as a side effect (an undici 7 `Agent` that Node 20's own `fetch` then uses
 * and trips on, TOOLCHAIN trap 4), and a library must not change its host's `fetch`. It also
 * mixes `request` into `Dispatcher.prototype`; here it is called with the pool as `this`
 * instead, so no prototype is touched either. Every request names its pool explicitly.
 */
import type { Dispatcher, Pool as PoolType } from 'undici';
import requestApi from 'undici/lib/api/api-request.js';
import PoolClass from 'undici/lib/dispatcher/pool.js';

export type Pool = PoolType;
export type PoolOptions = PoolType.Options;
export const Pool: typeof PoolType = PoolClass;
export type PoolResponse = Dispatcher.ResponseData;

/** `pool.request(options)`, without undici's prototype mix-in. */
export function poolRequest(pool: Pool, options: Dispatcher.RequestOptions): Promise<PoolResponse> {
  return requestApi.call(pool, options);
}
