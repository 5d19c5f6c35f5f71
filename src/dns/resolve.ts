import type { RecordWithTtl } from 'node:dns';
import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ResolvedDnsOptions } from './options.js';
import { scaleWeights } from './weights.js';

/** One shard as DNS describes it. */
export interface DnsRecord {
  /** `address:port` (`[address]:port` for IPv6): the shard id. */
  id: string;
  address: string;
  port: number;
  /**
   * The shard's weight: `dnsWeight`, scaled down with the answer's other weights when they add up
   * to more than `DNS_WEIGHT_TOTAL` (ratios kept).
   */
  weight: number;
  /**
   * The weight DNS gave: the SRV weight (summed over the records naming this address and port; a
   * weight-0 record counts as 1/100 of the lightest nonzero weight), 1 for A/AAAA.
   */
  dnsWeight: number;
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

/**
 * The addresses each name (the watched hostname, or an SRV target host) answered with last, per
 * family: what a failed lookup falls back to.
 */
export type KnownHosts = Map<string, { v4: string[]; v6: string[] }>;

/**
 * Resolves the watch's name to shards. A/AAAA: every address at `port`. SRV (RFC 2782): the
 * records of the lowest priority only (higher ones are backups), each target host resolved to its
 * addresses, weight from the record (scaled with the others, see `DNS_WEIGHT_TOTAL`). Rejects with the resolver's error (`ENOTFOUND`, `ESERVFAIL`,
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
    const host = await resolveHost(resolver, query.name, known);
    const records = host.addresses.map((address) => record(address, query.port, 1));
    scaleWeights(records);
    return { records, ttlMs: host.ttlMs, errors: host.error === undefined ? [] : [host.error] };
  }
  const srv = await resolver.resolveSrv(query.name);
  if (srv.length === 0) throw noData(query.name);
  const priority = Math.min(...srv.map((r) => r.priority));
  const group = srv.filter((r) => r.priority === priority);
  // RFC 2782: weight 0 means "very rarely" when others have weight; all 0 means equal shares.
  const positive = group.filter((r) => r.weight > 0).map((r) => r.weight);
  const zeroWeight = positive.length === 0 ? 1 : Math.min(...positive) / 100;
  // Each target host looked up once, however many records name it (a port each, say).
  const names = [...new Set(group.map((r) => r.name))];
  const settled = await Promise.allSettled(names.map((name) => resolveHost(resolver, name, known)));
  const addressesOf = new Map<string, readonly string[]>();
  let ttlMs = Number.POSITIVE_INFINITY;
  const errors: unknown[] = [];
  names.forEach((name, i) => {
    const host = settled[i]!;
    if (host.status === 'rejected') {
      errors.push(host.reason);
      const last = known.get(name);
      addressesOf.set(name, last === undefined ? [] : [...last.v4, ...last.v6]);
    } else {
      ttlMs = Math.min(ttlMs, host.value.ttlMs);
      addressesOf.set(name, host.value.addresses);
      if (host.value.error !== undefined) errors.push(host.value.error);
    }
  });
  const byId = new Map<string, DnsRecord>();
  for (const r of group) {
    for (const address of addressesOf.get(r.name)!) {
      const next = record(address, r.port, r.weight > 0 ? r.weight : zeroWeight);
      const same = byId.get(next.id);
      // Two records naming one address and port are one shard carrying both weights.
      if (same === undefined) byId.set(next.id, next);
      else same.dnsWeight += next.dnsWeight;
    }
  }
  // Hosts the answer no longer names are forgotten.
  for (const name of known.keys()) if (!addressesOf.has(name)) known.delete(name);
  if (byId.size === 0) throw errors[0] ?? noData(query.name);
  const records = [...byId.values()];
  scaleWeights(records);
  return { records, ttlMs, errors };
}

/** Codes that say a family has no records, not that the lookup failed. */
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * A and AAAA records of `name`. A family with no records (`ENODATA`) is fine when the other
 * answers; a family whose lookup failed (SERVFAIL, a timeout) keeps the addresses it had last in
 * `known` — a hiccup on AAAA alone must not drain the IPv6 shards — and its error is `error`.
 */
async function resolveHost(
  resolver: Resolver,
  name: string,
  known: KnownHosts,
): Promise<{ addresses: string[]; ttlMs: number; error?: unknown }> {
  // An SRV target or a hostname may already be an address (dnsmasq, tests, static setups).
  if (isIP(name) !== 0) return { addresses: [name], ttlMs: Number.POSITIVE_INFINITY };
  const [v4, v6] = await Promise.allSettled([
    resolver.resolve4(name, { ttl: true }),
    resolver.resolve6(name, { ttl: true }),
  ]);
  const last = known.get(name);
  const failed = (family: PromiseSettledResult<unknown>): boolean =>
    family.status === 'rejected' &&
    !NO_RECORDS.has(String((family.reason as { code?: unknown } | undefined)?.code));
  const answered = (family: PromiseSettledResult<RecordWithTtl[]>) =>
    family.status === 'fulfilled' ? family.value : [];
  const answers = [...answered(v4), ...answered(v6)];
  if (answers.length === 0) {
    // The A query's error says most (NXDOMAIN, SERVFAIL, timeout); AAAA's is usually ENODATA.
    if (v4.status === 'rejected') throw v4.reason;
    if (v6.status === 'rejected') throw v6.reason;
    throw noData(name);
  }
  let ttl = Number.POSITIVE_INFINITY;
  for (const a of answers) ttl = Math.min(ttl, a.ttl);
  const now = {
    v4: failed(v4) ? (last?.v4 ?? []) : answered(v4).map((a) => a.address),
    v6: failed(v6) ? (last?.v6 ?? []) : answered(v6).map((a) => a.address),
  };
  known.set(name, now);
  const error = failed(v4)
    ? (v4 as PromiseRejectedResult).reason
    : failed(v6)
      ? (v6 as PromiseRejectedResult).reason
      : undefined;
  return { addresses: [...now.v4, ...now.v6], ttlMs: ttl * 1_000, error };
}

function record(address: string, port: number, weight: number): DnsRecord {
  const host = isIP(address) === 6 ? `[${address}]` : address;
  return { id: `${host}:${port}`, address, port, weight, dnsWeight: weight };
}

function noData(name: string): Error {
  return Object.assign(new Error(`DNS answered no address for "${name}"`), {
    code: 'ENODATA',
    hostname: name,
  });
}
