import { ConfigError } from '../base/errors.js';
import type { ShardSpec } from '../base/types.js';
import {
  bool,
  checkKnownKeys,
  checkObject,
  denseArray,
  duration,
  nonNegativeInt,
  orDefault,
  positiveInt,
} from '../base/validate.js';
import type { BalancerOptions } from '../core/options.js';
import { type Compressor, resolveCompression } from '../transport/compression.js';
import type { HttpBalancerOptions, HttpShardSpec, HttpTarget, HttpTlsOptions } from './types.js';

/** The transport's defaults (documented on {@link HttpBalancerOptions}). */
/** The most requests one shard's pool may carry at once (connections × pipelining). */
const MAX_POOL_REQUESTS = 1_000_000;

export const HTTP_DEFAULTS = {
  connectionsPerShard: 8,
  pipelining: 1,
  keepAliveTimeoutMs: 4_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  bodyLimitBytes: 16 * 1024 * 1024,
  loadHeader: 'x-shard-load',
  maxRetryAfterMs: 60_000,
  /** A 429 without a usable `Retry-After` holds the shard this long. */
  defaultRetryAfterMs: 1_000,
  warm: 0,
  noDelay: true,
  keepAliveProbeMs: 30_000,
  maxRequestsPerConnection: 0,
  maxConnectionAgeMs: 300_000,
  /**
   * Bound on one attempt, ms, unless `timeoutMs` says otherwise: a shard that trickles its answer
   * (a byte now and then keeps `bodyTimeoutMs` from firing) cannot hold a run longer than this.
   */
  timeoutMs: 60_000,
} as const;

/** Option names the transport adds to the core's (the core rejects every other unknown name). */
export const HTTP_OPTION_KEYS = [
  'origins',
  'connectionsPerShard',
  'pipelining',
  'keepAliveTimeoutMs',
  'headersTimeoutMs',
  'bodyTimeoutMs',
  'bodyLimitBytes',
  'tls',
  'loadHeader',
  'maxRetryAfterMs',
  'warm',
  'noDelay',
  'keepAliveProbeMs',
  'maxRequestsPerConnection',
  'maxConnectionAgeMs',
  'compression',
] as const;

export interface ResolvedHttpOptions {
  connectionsPerShard: number;
  pipelining: number;
  keepAliveTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  bodyLimitBytes: number;
  tls: HttpTlsOptions | undefined;
  /** Lower-cased (undici lower-cases response header names), or undefined when off. */
  loadHeader: string | undefined;
  maxRetryAfterMs: number;
  /** Connections per shard opened ahead of the first request (0 = none). */
  warm: number;
  noDelay: boolean;
  /** TCP keep-alive initial delay, ms (0 = probes off). */
  keepAliveProbeMs: number;
  /** 0 = unlimited. */
  maxRequestsPerConnection: number;
  /** 0 = unlimited. */
  maxConnectionAgeMs: number;
  /** The default compression of `request()` bodies, if any. */
  compression: Compressor | undefined;
}

/**
 * Validates the transport's options and turns `origins`/`shards` into core shard specs. The
 * core's own options are validated by the `Balancer` constructor, which also rejects unknown
 * names (it is given {@link HTTP_OPTION_KEYS}).
 */
export function resolveHttpOptions(options: HttpBalancerOptions): {
  core: BalancerOptions<HttpTarget>;
  http: ResolvedHttpOptions;
} {
  checkObject('options', options);
  const o = options;
  let shards: ShardSpec<HttpTarget>[];
  if (o.origins !== undefined && o.shards !== undefined) {
    throw new ConfigError(
      'origins',
      'and `shards` cannot both be given: pass one of them',
      o.origins,
      {
        given: false,
      },
    );
  }
  if (o.origins !== undefined) {
    if (!Array.isArray(o.origins) || o.origins.length === 0) {
      throw new ConfigError('origins', 'must be a non-empty array of URL strings', o.origins);
    }
    const first = new Map<string, number>();
    shards = denseArray('origins', o.origins, 'origin URL strings').map((origin, i) => {
      const target = toTarget(`origins[${i}]`, origin);
      // Named as given: the core would name `shards[i].id`, a field the caller never wrote.
      const seen = first.get(target.origin);
      if (seen !== undefined) {
        throw new ConfigError(
          `origins[${i}]`,
          `must differ from origins[${seen}] (both are ${target.origin}; one pool a shard)`,
          origin,
        );
      }
      first.set(target.origin, i);
      return { id: target.origin, target };
    });
  } else if (o.shards !== undefined) {
    if (!Array.isArray(o.shards) || o.shards.length === 0) {
      throw new ConfigError('shards', 'must be a non-empty array of shard specs', o.shards);
    }
    shards = denseArray('shards', o.shards, 'shard specs').map((spec, i) =>
      toShardSpec(`shards[${i}]`, spec),
    );
  } else {
    throw new ConfigError(
      'origins',
      'is required (or `shards`): list the shards, e.g. origins: ["http://10.0.0.1:8080"]',
      undefined,
      { given: false },
    );
  }
  const connectionsPerShard =
    o.connectionsPerShard === undefined
      ? HTTP_DEFAULTS.connectionsPerShard
      : positiveInt('connectionsPerShard', o.connectionsPerShard);
  const pipelining =
    o.pipelining === undefined
      ? HTTP_DEFAULTS.pipelining
      : nonNegativeInt('pipelining', o.pipelining);
  // A shard's in-flight cap is their product: bounded here, where the caller's names are known.
  if (connectionsPerShard > MAX_POOL_REQUESTS) {
    throw new ConfigError('connectionsPerShard', 'must be at most 1 000 000', connectionsPerShard);
  }
  if (connectionsPerShard * Math.max(1, pipelining) > MAX_POOL_REQUESTS) {
    throw new ConfigError(
      'pipelining',
      'must keep connectionsPerShard × pipelining at most 1 000 000 requests in flight a shard',
      pipelining,
    );
  }
  const http: ResolvedHttpOptions = {
    connectionsPerShard,
    pipelining,
    keepAliveTimeoutMs: orDefault(o.keepAliveTimeoutMs, HTTP_DEFAULTS.keepAliveTimeoutMs, (v) =>
      duration('keepAliveTimeoutMs', v, true),
    ),
    headersTimeoutMs: orDefault(o.headersTimeoutMs, HTTP_DEFAULTS.headersTimeoutMs, (v) =>
      duration('headersTimeoutMs', v),
    ),
    bodyTimeoutMs: orDefault(o.bodyTimeoutMs, HTTP_DEFAULTS.bodyTimeoutMs, (v) =>
      duration('bodyTimeoutMs', v),
    ),
    bodyLimitBytes: orDefault(o.bodyLimitBytes, HTTP_DEFAULTS.bodyLimitBytes, (v) =>
      positiveInt('bodyLimitBytes', v, true),
    ),
    tls: o.tls === undefined ? undefined : checkTls(o.tls),
    loadHeader: resolveLoadHeader(o.loadHeader),
    maxRetryAfterMs: orDefault(o.maxRetryAfterMs, HTTP_DEFAULTS.maxRetryAfterMs, (v) =>
      duration('maxRetryAfterMs', v),
    ),
    warm: o.warm === undefined ? HTTP_DEFAULTS.warm : checkWarm(o.warm, connectionsPerShard),
    noDelay: orDefault(o.noDelay, HTTP_DEFAULTS.noDelay, (v) => bool('noDelay', v)),
    keepAliveProbeMs: orDefault(o.keepAliveProbeMs, HTTP_DEFAULTS.keepAliveProbeMs, (v) =>
      duration('keepAliveProbeMs', v),
    ),
    maxRequestsPerConnection: orDefault(
      o.maxRequestsPerConnection,
      HTTP_DEFAULTS.maxRequestsPerConnection,
      (v) => nonNegativeInt('maxRequestsPerConnection', v),
    ),
    maxConnectionAgeMs: orDefault(o.maxConnectionAgeMs, HTTP_DEFAULTS.maxConnectionAgeMs, (v) =>
      duration('maxConnectionAgeMs', v),
    ),
    compression: resolveCompression('compression', o.compression),
  };
  if (http.tls !== undefined)
    for (let i = 0; i < shards.length; i++)
      checkTlsOrigin(`${o.origins !== undefined ? 'origins' : 'shards'}[${i}]`, shards[i]!.target);
  const core: BalancerOptions<HttpTarget> & Record<string, unknown> = { ...o, shards };
  if (core.timeoutMs === undefined) core.timeoutMs = HTTP_DEFAULTS.timeoutMs;
  // Keep the in-flight cap at what the pool can carry at once, so excess runs wait in the
  // balancer (where the next free shard is picked) rather than in one shard's pool queue.
  if (core.maxInFlightPerShard === undefined) {
    core.maxInFlightPerShard = connectionsPerShard * Math.max(1, pipelining);
  }
  return { core, http };
}

/** Warm connections per shard: an integer from 0 to `connectionsPerShard`. */
export function checkWarm(value: unknown, connectionsPerShard: number, field = 'warm'): number {
  const n = nonNegativeInt(field, value);
  if (n > connectionsPerShard) {
    throw new ConfigError(
      field,
      `must be at most \`connectionsPerShard\` (${connectionsPerShard}): a pool opens no more`,
      value,
    );
  }
  return n;
}

function resolveLoadHeader(value: unknown): string | undefined {
  if (value === undefined) return HTTP_DEFAULTS.loadHeader;
  if (value === false) return undefined;
  if (typeof value !== 'string' || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(value)) {
    throw new ConfigError('loadHeader', 'must be a header name or false', value);
  }
  return value.toLowerCase();
}

/**
 * `tls` applies to https: origins only; with an http: origin the traffic would go in plaintext
 * while the user believes it encrypted.
 */
function checkTlsOrigin(field: string, target: HttpTarget): void {
  if (target.origin.startsWith('http:')) {
    throw new ConfigError(
      field,
      'is an http: origin, but `tls` is set: TLS applies to https: origins only, and this traffic would go in plaintext; use https:',
      target.origin,
    );
  }
}

/**
 * A core shard spec from an HTTP one (target normalised to a frozen `{ origin }`). With `tls`
 * set, an http: origin is refused.
 */
export function toShardSpec(field: string, spec: unknown, tls = false): ShardSpec<HttpTarget> {
  checkObject(field, spec);
  checkKnownKeys(field, spec, ['id', 'target', 'weight', 'zone', 'labels']);
  const s = spec as HttpShardSpec;
  const target = toTarget(`${field}.target`, s.target);
  if (tls) checkTlsOrigin(`${field}.target`, target);
  const out: ShardSpec<HttpTarget> = { id: s.id, target };
  if (s.weight !== undefined) out.weight = s.weight;
  if (s.zone !== undefined) out.zone = s.zone;
  if (s.labels !== undefined) out.labels = s.labels;
  return out;
}

/** Parses an origin (string or `{ origin }`) into a frozen {@link HttpTarget}. */
export function toTarget(field: string, value: unknown): HttpTarget {
  let text: unknown = value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    checkKnownKeys(field, value, ['origin']);
    text = (value as { origin?: unknown }).origin;
    field = `${field}.origin`;
  }
  if (typeof text !== 'string') {
    throw new ConfigError(field, 'must be an http: or https: origin URL string', text);
  }
  // Credentials may sit in a URL: never echo one that has an `@` in it.
  const echo = !text.includes('@');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(field, 'must be an absolute http: or https: URL', text, { given: echo });
  }
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError(
      field,
      'must not carry credentials (user:password@): send them in request headers',
      undefined,
      { given: false },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(field, 'must use http: or https:', text, { given: echo });
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new ConfigError(
      field,
      'must be an origin (scheme://host[:port]) without a path, query or fragment',
      text,
      { given: echo },
    );
  }
  return Object.freeze({ origin: url.origin });
}

function checkPem(field: string, value: unknown): void {
  const one = (v: unknown) => typeof v === 'string' || Buffer.isBuffer(v);
  if (!(one(value) || (Array.isArray(value) && value.every(one)))) {
    throw new ConfigError(field, 'must be a PEM string, a Buffer, or an array of them', value);
  }
}

function checkTls(value: unknown): HttpTlsOptions {
  checkObject('tls', value);
  checkKnownKeys('tls', value, ['ca', 'cert', 'key', 'rejectUnauthorized', 'servername']);
  const t = value as HttpTlsOptions;
  if (t.ca !== undefined) checkPem('tls.ca', t.ca);
  if (t.cert !== undefined) checkPem('tls.cert', t.cert);
  if (t.key !== undefined) checkPem('tls.key', t.key);
  if (t.rejectUnauthorized !== undefined) bool('tls.rejectUnauthorized', t.rejectUnauthorized);
  if (t.servername !== undefined && (typeof t.servername !== 'string' || t.servername === '')) {
    throw new ConfigError('tls.servername', 'must be a non-empty string', t.servername);
  }
  const out: HttpTlsOptions = {};
  for (const k of ['ca', 'cert', 'key', 'rejectUnauthorized', 'servername'] as const) {
    if (t[k] !== undefined) (out as Record<string, unknown>)[k] = t[k];
  }
  return out;
}
