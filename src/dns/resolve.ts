import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ResolvedDnsOptions } from './options.js';

/** One shard as DNS describes it. */
export interface DnsRecord {
  /** `address:port` (`[address]:port` for IPv6): the shard id. */
  id: string;
  address: string;
  port: number;
  /** Relative weight (SRV weight; 1 for A/AAAA). */
  weight: number;
}

/** What one resolution found: the shards, and the shortest TTL among the answers (ms). */
export interface Resolution {
  records: DnsRecord[];
  ttlMs: number;
  /**
   * The lookups of SRV targets that failed this time, while others answered: each such target
   * is in `records` at the addresses it last had (none, if it never answered).
   */
  errors: unknown[];
}

/** The addresses each SRV target host answered with last: what a failed lookup falls back to. */
export type KnownHosts = Map<string, string[]>;

/**
 * Resolves the watch's name to shards. A/AAAA: every address at `port`. SRV (RFC 2782): the
 * records of the lowest priority only (higher ones are backups), each target host resolved to its
 * addresses, weight from the record. Rejects with the resolver's error (`ENOTFOUND`, `ESERVFAIL`,
 * `ETIMEOUT`, …) or, when the answer holds no address, an error with code `ENODATA`.
 *
 * A target host whose own lookup fails while the SRV answer still names it keeps the addresses
 * it had in `known` (a DNS hiccup is not a departure: dropping them would drain its shards and
 * move its keys, only for the next answer to bring them back); its error is in `errors`. Its
 * shards leave when the SRV answer stops naming it. `known` is updated in place.
 */
export async function resolveShards(
  resolver: Resolver,
  query: ResolvedDnsOptions['query'],
  known: KnownHosts = new Map(),
): Promise<Resolution> {
  if (query.kind === 'hostname') {
    const { addresses, ttlMs } = await resolveHost(resolver, query.name);
    const records = addresses.map((address) => record(address, query.port, 1));
    return { records, ttlMs, errors: [] };
  }
  const srv = await resolver.resolveSrv(query.name);
  if (srv.length === 0) throw noData(query.name);
  const priority = Math.min(...srv.map((r) => r.priority));
  const group = srv.filter((r) => r.priority === priority);
  // RFC 2782: weight 0 means "very rarely" when others have weight; all 0 means equal shares.
  const positive = group.filter((r) => r.weight > 0).map((r) => r.weight);
  const zeroWeight = positive.length === 0 ? 1 : Math.min(...positive) / 100;
  const hosts = await Promise.allSettled(group.map((r) => resolveHost(resolver, r.name)));
  const byId = new Map<string, DnsRecord>();
  let ttlMs = Number.POSITIVE_INFINITY;
  const errors: unknown[] = [];
  hosts.forEach((host, i) => {
    const r = group[i]!;
    let addresses: readonly string[];
    if (host.status === 'rejected') {
      errors.push(host.reason);
      addresses = known.get(r.name) ?? [];
    } else {
      ttlMs = Math.min(ttlMs, host.value.ttlMs);
      addresses = host.value.addresses;
      known.set(r.name, host.value.addresses);
    }
    for (const address of addresses) {
      const next = record(address, r.port, r.weight > 0 ? r.weight : zeroWeight);
      const same = byId.get(next.id);
      // Two records naming one address and port are one shard carrying both weights.
      if (same === undefined) byId.set(next.id, next);
      else same.weight += next.weight;
    }
  });
  // Hosts the answer no longer names are forgotten.
  const named = new Set(group.map((r) => r.name));
  for (const name of known.keys()) if (!named.has(name)) known.delete(name);
  if (byId.size === 0) throw errors[0] ?? noData(query.name);
  return { records: [...byId.values()], ttlMs, errors };
}

/** A and AAAA records of `name`; one family failing is fine when the other answers. */
async function resolveHost(
  resolver: Resolver,
  name: string,
): Promise<{ addresses: string[]; ttlMs: number }> {
  // An SRV target or a hostname may already be an address (dnsmasq, tests, static setups).
  if (isIP(name) !== 0) return { addresses: [name], ttlMs: Number.POSITIVE_INFINITY };
  const [v4, v6] = await Promise.allSettled([
    resolver.resolve4(name, { ttl: true }),
    resolver.resolve6(name, { ttl: true }),
  ]);
  const answers = [
    ...(v4.status === 'fulfilled' ? v4.value : []),
    ...(v6.status === 'fulfilled' ? v6.value : []),
  ];
  if (answers.length === 0) {
    // The A query's error says most (NXDOMAIN, SERVFAIL, timeout); AAAA's is usually ENODATA.
    if (v4.status === 'rejected') throw v4.reason;
    if (v6.status === 'rejected') throw v6.reason;
    throw noData(name);
  }
  let ttl = Number.POSITIVE_INFINITY;
  for (const a of answers) ttl = Math.min(ttl, a.ttl);
  return { addresses: answers.map((a) => a.address), ttlMs: ttl * 1_000 };
}

function record(address: string, port: number, weight: number): DnsRecord {
  const host = isIP(address) === 6 ? `[${address}]` : address;
  return { id: `${host}:${port}`, address, port, weight };
}

function noData(name: string): Error {
  return Object.assign(new Error(`DNS answered no address for "${name}"`), {
    code: 'ENODATA',
    hostname: name,
  });
}
