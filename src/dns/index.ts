/**
 * shardwise/dns — a balancer's membership from DNS: A/AAAA records of a name (a headless
 * Kubernetes Service, a round-robin name) or SRV records, re-resolved as the TTL and `refreshMs`
 * say. Imports the core; the core never imports it.
 */
import type { DnsWatchOptions } from './options.js';
import { type DnsMembership, DnsWatch } from './watch.js';

export { DNS_DEFAULTS, type DnsWatchOptions } from './options.js';
export type { DnsRecord } from './resolve.js';
export {
  type DnsChange,
  type DnsMembership,
  DnsWatch,
  type DnsWatchEvents,
  MIN_TTL_REFRESH_MS,
  RETRY_BASE_MS,
} from './watch.js';
export { DNS_WEIGHT_TOTAL } from './weights.js';

/**
 * Watches DNS and keeps `balancer`'s membership equal to the resolved set. The watch owns the
 * whole membership: the first resolution replaces the shards the balancer was built with. Shard
 * ids are the resolved `address:port` (`[address]:port` for IPv6), for SRV records too; SRV
 * weights become shard weights (lowest priority only), scaled down together — ratios kept — when
 * they add up to more than {@link DNS_WEIGHT_TOTAL}, so no answer is refused for its weights and a
 * membership change from DNS asks a ring for at most `vnodes × 1 000 + n` points. Every `refreshMs` (default 5 000; sooner
 * when the records' TTL is shorter, but at most once a second) it re-resolves and applies only
 * the difference through `setShards`: kept shards keep their state (EWMA, limits, health), removed
 * ones drain. A failed, NXDOMAIN or empty resolution keeps the last good set, emits `'error'` and
 * retries with jittered exponential backoff (from 1 s up to `refreshMs`): a balancer never goes to
 * zero shards because of DNS. An SRV target whose own lookup fails keeps its last addresses the
 * same way (reported, retried with backoff); it leaves when the SRV answer stops naming it.
 * Timers run on the balancer's `clock` and never keep the process alive.
 *
 * Targets are `${scheme}://${address}:${port}` strings (for the core `Balancer<string>` and
 * `createHttpBalancer`), or what `target(address, port)` returns (required for other targets,
 * e.g. S3's `{ client, bucket }`).
 *
 * @example
 * import { createHttpBalancer } from 'shardwise/http';
 * import { watchDns } from 'shardwise/dns';
 * const http = createHttpBalancer({ origins: ['http://ingest.internal:8080'] });
 * const watch = watchDns(http, { hostname: 'ingest.internal', port: 8080, refreshMs: 5_000 });
 * watch.on('error', (err) => console.warn('DNS:', err));
 * await watch.ready; // the first resolution is applied
 * // … later
 * watch.close();
 */
export function watchDns(
  balancer: DnsMembership<string>,
  options: DnsWatchOptions<string>,
): DnsWatch;
export function watchDns<T>(
  balancer: DnsMembership<T>,
  options: DnsWatchOptions<T> & { target: (address: string, port: number) => T },
): DnsWatch;
export function watchDns(
  balancer: DnsMembership<unknown>,
  options: DnsWatchOptions<unknown>,
): DnsWatch {
  return new DnsWatch(balancer, options);
}
