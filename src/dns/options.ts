import { ConfigError } from '../base/errors.js';
import { MAX_TIMER_STEP_MS } from '../base/runtime.js';
import {
  checkKnownKeys,
  checkObject,
  duration,
  fn,
  oneOf,
  orDefault,
  positiveInt,
} from '../base/validate.js';

/**
 * Options of {@link watchDns}: what to resolve (`hostname` or `srv`, one of them), how a record
 * becomes a shard, and how often to look again.
 *
 * @example
 * const options: DnsWatchOptions = { srv: '_ingest._tcp.internal', servers: ['10.0.0.53'], refreshMs: 10_000 };
 */
export interface DnsWatchOptions<T = string> {
  /** A name whose A and AAAA records are the shards (a headless Kubernetes Service, …). */
  hostname?: string;
  /** An SRV name (`_ingest._tcp.example.internal`): each record gives a host, a port and a weight. */
  srv?: string;
  /** The shards' port, with `hostname` (SRV records carry their own). An integer 1–65535. */
  port?: number;
  /** Scheme of the default target `${scheme}://${address}:${port}`: `'http'` (default) or `'https'`. */
  scheme?: 'http' | 'https';
  /**
   * Re-resolve at most this often, ms (default 5 000); sooner when the records' TTL is shorter,
   * but never more often than once a second because of a TTL.
   */
  refreshMs?: number;
  /** DNS servers to ask (`'127.0.0.1:5353'`, `'[::1]:53'`); default: the system's. */
  servers?: string[];
  /**
   * Maps a resolved record to a shard target (default: the URL string
   * `${scheme}://${address}:${port}`, IPv6 addresses in brackets). Needed when the balancer's
   * targets are not URL strings (S3: `{ client, bucket }`). Called once per new shard.
   */
  target?: (address: string, port: number) => T;
  /** Time a DNS query may take before it is retried, ms (default 2 000; two tries per query). */
  timeoutMs?: number;
}

/** The options with their defaults applied. */
export interface ResolvedDnsOptions {
  query: { kind: 'hostname'; name: string; port: number } | { kind: 'srv'; name: string };
  scheme: 'http' | 'https';
  refreshMs: number;
  servers: string[] | undefined;
  target: ((address: string, port: number) => unknown) | undefined;
  timeoutMs: number;
}

export const DNS_DEFAULTS = { scheme: 'http', refreshMs: 5_000, timeoutMs: 2_000 } as const;

const KEYS = ['hostname', 'srv', 'port', 'scheme', 'refreshMs', 'servers', 'target', 'timeoutMs'];

/** Checks `watchDns` options once; each problem is a `ConfigError` naming the field. */
export function resolveDnsOptions(options: unknown): ResolvedDnsOptions {
  checkObject('watchDns options', options);
  checkKnownKeys('', options, KEYS);
  const o = options as DnsWatchOptions<unknown>;
  if ((o.hostname === undefined) === (o.srv === undefined)) {
    throw new ConfigError(
      'hostname',
      'or `srv` is required, and only one of them: the watch resolves one name',
      o.hostname,
    );
  }
  let query: ResolvedDnsOptions['query'];
  if (o.hostname !== undefined) {
    const name = dnsName('hostname', o.hostname);
    if (o.port === undefined) {
      throw new ConfigError('port', 'is required with `hostname` (an integer 1–65535)', undefined, {
        given: false,
      });
    }
    query = { kind: 'hostname', name, port: port('port', o.port) };
  } else {
    if (o.port !== undefined) {
      throw new ConfigError(
        'port',
        'must be left out with `srv`: SRV records carry the port',
        o.port,
      );
    }
    query = { kind: 'srv', name: dnsName('srv', o.srv) };
  }
  if (o.servers !== undefined) {
    if (
      !Array.isArray(o.servers) ||
      o.servers.length === 0 ||
      !o.servers.every((s) => typeof s === 'string' && s !== '')
    ) {
      throw new ConfigError(
        'servers',
        'must be a non-empty array of "host[:port]" strings',
        o.servers,
      );
    }
  }
  if (o.target !== undefined) fn('target', o.target);
  return {
    query,
    scheme: orDefault(o.scheme, DNS_DEFAULTS.scheme, (v) => oneOf('scheme', v, ['http', 'https'])),
    refreshMs: orDefault(o.refreshMs, DNS_DEFAULTS.refreshMs, (v) =>
      duration('refreshMs', v, true),
    ),
    servers: o.servers === undefined ? undefined : [...o.servers],
    target: o.target,
    timeoutMs: orDefault(o.timeoutMs, DNS_DEFAULTS.timeoutMs, resolverTimeout),
  };
}

/** A DNS name: labels of letters, digits, `-` and `_` (SRV), 1–63 characters each, dot-separated. */
const DNS_NAME = /^(?!-)[a-z0-9_-]{1,63}(\.[a-z0-9_-]{1,63})*\.?$/i;

function dnsName(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > 253 || !DNS_NAME.test(value)) {
    const hint =
      typeof value === 'string' && /:\/\/|:\d+$/.test(value)
        ? ' — a name only: no scheme (`scheme`) and no port (`port`)'
        : '';
    throw new ConfigError(
      field,
      `must be a DNS name (labels of letters, digits, "-" and "_", at most 253 characters)${hint}`,
      value,
    );
  }
  return value;
}

/** The resolver's own timeout: a positive integer of ms within Node's timer limit. */
function resolverTimeout(value: unknown): number {
  const ms = positiveInt('timeoutMs', value);
  if (ms > MAX_TIMER_STEP_MS) {
    throw new ConfigError(
      'timeoutMs',
      `must be at most ${MAX_TIMER_STEP_MS} ms (2³¹ − 1: Node's timer limit, which its DNS resolver has)`,
      value,
    );
  }
  return ms;
}

function port(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65_535) {
    throw new ConfigError(field, 'must be an integer from 1 to 65535', value);
  }
  return value;
}
