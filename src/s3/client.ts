import * as http from 'node:http';
import * as https from 'node:https';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ConfigError, renamedConfigError } from '../base/errors.js';
import { MAX_TIMER_STEP_MS } from '../base/runtime.js';
import { checkObject, nonNegativeInt, positiveInt } from '../base/validate.js';
import { samePlainData } from '../core/membership.js';
import type { CreateS3ClientOptions } from './types.js';

/** Defaults of {@link createS3Client}. */
export const S3_CLIENT_DEFAULTS = {
  maxSockets: 50,
  connectionTimeoutMs: 5_000,
  socketTimeoutMs: 0,
  /** The balancer retries on another target; the SDK's own retries would stay on this one. */
  maxAttempts: 1,
} as const;

/**
 * A timeout the SDK arms with Node's own timer, which holds at most 2³¹ − 1 ms (a longer one fires
 * after about 1 ms): an integer from 0 (none) to that.
 */
function sdkTimer(field: string, value: unknown): number {
  const ms = nonNegativeInt(field, value);
  if (ms > MAX_TIMER_STEP_MS) {
    throw new ConfigError(
      field,
      `must be at most ${MAX_TIMER_STEP_MS} ms (2³¹ − 1: Node's timer limit, which the SDK's timer has)`,
      value,
    );
  }
  return ms;
}

const noop = (): void => {};
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop };

/** Near-misses of createS3Client's own options (or the SDK handler's names for them). */
const NEAR_MISSES: Record<string, string> = {
  maxsocket: 'maxSockets',
  maxsockets: 'maxSockets',
  connectiontimeout: 'connectionTimeoutMs',
  sockettimeout: 'socketTimeoutMs',
};

/**
 * Builds an `S3Client` that keeps connections alive: a `NodeHttpHandler` over `http.Agent` and
 * `https.Agent` with `keepAlive: true` and `maxSockets` sockets per host, so puts reuse warm
 * connections instead of paying a TCP (and TLS) handshake each. `maxAttempts` defaults to 1:
 * the balancer retries a failed put on another target, where the SDK would retry on the same
 * one (and would sit out a `SlowDown` instead of moving on). Every `S3ClientConfig` field may be
 * given; an explicit `requestHandler` is used as is.
 *
 * @example
 * const client = createS3Client({ region: 'eu-west-1', maxSockets: 64 });
 * const s3 = createS3Balancer({ targets: [{ client, bucket: 'ingest-a' }, { client, bucket: 'ingest-b' }] });
 */
export function createS3Client(options: CreateS3ClientOptions = {}): S3Client {
  checkObject('options', options);
  const { maxSockets, connectionTimeoutMs, socketTimeoutMs, ...config } = options;
  // The rest goes to the SDK, whose keys are open-ended; a near-miss of ours would be ignored.
  for (const key of Object.keys(config)) {
    const ours = NEAR_MISSES[key.toLowerCase().replace(/ms$/, '')];
    if (ours !== undefined) {
      throw new ConfigError(
        key,
        `is not an option of createS3Client: did you mean \`${ours}\`?`,
        (config as Record<string, unknown>)[key],
      );
    }
  }
  const sockets =
    maxSockets === undefined
      ? S3_CLIENT_DEFAULTS.maxSockets
      : positiveInt('maxSockets', maxSockets, true);
  const connectionTimeout =
    connectionTimeoutMs === undefined
      ? S3_CLIENT_DEFAULTS.connectionTimeoutMs
      : sdkTimer('connectionTimeoutMs', connectionTimeoutMs);
  const socketTimeout =
    socketTimeoutMs === undefined
      ? S3_CLIENT_DEFAULTS.socketTimeoutMs
      : sdkTimer('socketTimeoutMs', socketTimeoutMs);
  return new S3Client({
    maxAttempts: S3_CLIENT_DEFAULTS.maxAttempts,
    // The SDK prints "An error was encountered in a non-retryable streaming request" to the
    // console for every failed stream put unless a logger is set; the balancer, not the SDK,
    // decides retries here, so the notice only misleads. A logger you pass is used as is.
    logger: quietLogger,
    ...config,
    requestHandler:
      config.requestHandler ??
      new NodeHttpHandler({
        httpAgent: new http.Agent({ keepAlive: true, maxSockets: sockets }),
        httpsAgent: new https.Agent({ keepAlive: true, maxSockets: sockets }),
        connectionTimeout,
        socketTimeout,
      }),
  });
}

/**
 * The balancer's own clients, one per distinct options: options equal to ones seen (a config
 * re-read for `setShards`) share their client, so a staying target keeps its shard and no client
 * is built that only `close()` would destroy. Each is kept under a copy of its options taken
 * before the SDK saw them (it marks the credentials it is given).
 */
export function ownedClientFor(owned: Map<unknown, S3Client>) {
  return (options: CreateS3ClientOptions, field: string): S3Client => {
    for (const [seen, client] of owned) if (samePlainData(seen, options)) return client;
    const copy = plainCopy(options);
    let client: S3Client;
    try {
      client = createS3Client(options);
    } catch (error) {
      if (error instanceof ConfigError) {
        throw renamedConfigError(error, `${field}.${error.field}`);
      }
      throw error;
    }
    owned.set(copy, client);
    return client;
  };
}

/** A deep copy of plain data (objects, arrays); anything else (a function, a handler) as is. */
function plainCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(plainCopy);
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = plainCopy(v);
  return out;
}
