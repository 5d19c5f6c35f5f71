import type { S3Client } from '@aws-sdk/client-s3';
import { reduceError } from '../base/redact.js';
import { CONNECT_ERROR_CODES } from '../retry/options.js';
import { adviseMs, pushBackError } from '../transport/push-back.js';
import { S3Error } from './errors.js';

/** Where an S3 error is being judged. */
export interface S3CallInfo {
  operation: string;
  shardId: string;
  bucket: string;
  /** The full key (prefix included). */
  key: string;
  /** A `SlowDown` without a usable `Retry-After` holds the target this long, ms. */
  defaultRetryAfterMs: number;
  /** Cap on an advised wait, ms. */
  maxRetryAfterMs: number;
  /** The wall clock, for an HTTP-date `Retry-After` (epoch ms). */
  wallClock: () => number;
  /**
   * Secret values of the call (its credentials), scrubbed from the SDK's message. Optional: the
   * secrets an SDK error reveals about its own request are found and scrubbed anyway.
   */
  secrets?: readonly string[];
}

/** S3 (and S3-compatible stores') codes that mean "too fast": load, not ill health. */
const THROTTLE_CODES = new Set([
  'SlowDown',
  'ServiceUnavailable',
  'Throttling',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequests',
  'TooManyRequestsException',
  'RequestThrottled',
]);

/** 4xx codes that are a transient condition of the target, not a fault of the request. */
const RETRYABLE_4XX = new Set(['RequestTimeout', 'RequestTimeoutException']);

interface SdkErrorLike {
  name?: unknown;
  code?: unknown;
  Code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown; requestId?: unknown };
  $response?: { statusCode?: unknown; headers?: Record<string, unknown> };
}

/**
 * The error the balancer should see for an error an `S3Client` threw (an SDK service exception,
 * a socket error, or anything else):
 *
 * - `SlowDown` (and the other throttling codes), HTTP 429, 503 `ServiceUnavailable`, or any 503
 *   with a `Retry-After` → `PushBackError` (the target's cost rises for the advised time, or
 *   `defaultRetryAfterMs`, capped at `maxRetryAfterMs`);
 * - other 5xx (and a 200 carrying an error, as `CompleteMultipartUpload` may send) →
 *   `S3Error` with `retryable: true`;
 * - 4xx (`NoSuchBucket`, `AccessDenied`, `InvalidArgument`, …) → `S3Error` with
 *   `retryable: false`, except `RequestTimeout`;
 * - socket errors (`ECONNREFUSED`, `ECONNRESET`, …) → `S3Error` with `retryable: true`, and
 *   `notSent: true` when the code proves nothing was sent;
 * - another SDK error (it carries `$metadata` or `$response`: a raw request or response) →
 *   reduced to its name, code and message (`reduceError`);
 * - anything else (an abort, a `ConfigError`, a credentials error) → unchanged.
 *
 * @example
 * classifyS3Error({ name: 'SlowDown', $metadata: { httpStatusCode: 503 } }, info); // PushBackError(1000)
 */
export function classifyS3Error(error: unknown, info: S3CallInfo): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const e = error as SdkErrorLike;
  if (e.name === 'AbortError') return error;
  const status = statusOf(e);
  const s3Code = codeOf(e);
  if (status === undefined) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code === undefined || !/^E[A-Z]+$/.test(code)) {
      return isSdkError(e) ? reduceError(error, info.secrets) : error;
    }
    return new S3Error({
      ...where(info),
      s3Code: code,
      retryable: true,
      notSent: CONNECT_ERROR_CODES.has(code),
      cause: reduceError(error, info.secrets),
    });
  }
  const throttled =
    status === 429 ||
    (s3Code !== undefined && THROTTLE_CODES.has(s3Code)) ||
    (status === 503 && retryAfterOf(e) !== undefined);
  if (throttled) {
    const ms = adviseMs({
      retryAfter: retryAfterOf(e),
      fallbackMs: info.defaultRetryAfterMs,
      maxMs: info.maxRetryAfterMs,
      wallClock: info.wallClock,
    })!;
    return pushBackError(
      ms,
      `S3 ${info.operation} to bucket "${info.bucket}" on shard "${info.shardId}" was pushed back (${
        s3Code ?? 'HTTP'
      } ${status}): retry after ${ms} ms`,
      { statusCode: status, s3Code },
      reduceError(error, info.secrets),
    );
  }
  const clientFault =
    status >= 400 && status < 500 && !(s3Code !== undefined && RETRYABLE_4XX.has(s3Code));
  return new S3Error({
    ...where(info),
    statusCode: status,
    s3Code,
    requestId: typeof e.$metadata?.requestId === 'string' ? e.$metadata.requestId : undefined,
    retryable: !clientFault,
    cause: reduceError(error, info.secrets),
  });
}

/** An error from the AWS SDK (or shaped like one): it may hold its raw request and response. */
function isSdkError(e: SdkErrorLike): boolean {
  return e.$metadata !== undefined || e.$response !== undefined;
}

function where(info: S3CallInfo) {
  return { operation: info.operation, shardId: info.shardId, bucket: info.bucket, key: info.key };
}

function statusOf(e: SdkErrorLike): number | undefined {
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
}

function codeOf(e: SdkErrorLike): string | undefined {
  if (typeof e.Code === 'string' && e.Code !== '') return e.Code;
  if (typeof e.name === 'string' && e.name !== '' && e.name !== 'Error') return e.name;
  return undefined;
}

function retryAfterOf(e: SdkErrorLike): string | undefined {
  const headers = e.$response?.headers;
  if (typeof headers !== 'object' || headers === null) return undefined;
  for (const name of Object.keys(headers)) {
    if (name.toLowerCase() !== 'retry-after') continue;
    const value = headers[name];
    if (typeof value === 'string') return value;
    if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  }
  return undefined;
}

/**
 * The credentials the client signs with (access key id, secret key, session token), for
 * {@link S3CallInfo.secrets}: a store that quotes them in an error message (a token it refused)
 * does not leak them through the error. Read on the error path only, from the client's memoized
 * provider; a provider that throws gives none.
 */
export async function credentialSecrets(client: S3Client): Promise<string[]> {
  try {
    const provider = (client as { config?: { credentials?: unknown } }).config?.credentials;
    if (typeof provider !== 'function') return [];
    const c = (await provider()) as Record<string, unknown> | undefined;
    return [c?.sessionToken, c?.secretAccessKey, c?.accessKeyId].filter(
      (v): v is string => typeof v === 'string' && v.length >= 4,
    );
  } catch {
    return [];
  }
}
