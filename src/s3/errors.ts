/**
 * Errors of the S3 transport, branded like the core's (`src/base/errors.ts`): a stable `code`, a
 * `name`, and a `Symbol.for('shardwise.error')` brand that `isShardwiseError` recognises from any
 * copy of the package. They never hold credentials, request headers or bodies.
 */

import { brand, hasCode, isBranded, type ShardwiseErrorGuard } from '../base/errors.js';
import type { ShardwiseErrorClasses } from '../core/error-guard.js';

/** What an `S3Error` is told about the failed call. */
export interface S3ErrorDetails {
  /** The S3 operation: `PutObject`, `UploadPart`, … */
  operation: string;
  shardId: string;
  bucket: string;
  /** The full key (prefix included). */
  key: string;
  /** The HTTP status, when a response arrived. */
  statusCode?: number | undefined;
  /** The S3 error code (`NoSuchBucket`, `AccessDenied`, …) or the socket error code. */
  s3Code?: string | undefined;
  /** S3's request id, for a support case. */
  requestId?: string | undefined;
  /** Worth another target: true for 5xx and network errors, false for 4xx. */
  retryable: boolean;
  /** The call provably never reached the target (connection refused, no route). */
  notSent?: boolean;
  cause?: unknown;
}

/**
 * An S3 call failed on one target: a 4xx (`retryable: false`: the request itself is at fault),
 * a 5xx or a network error (`retryable: true`: another target may do better). `SlowDown` and
 * 503 with `Retry-After` are not `S3Error`s but `PushBackError`s.
 *
 * @example
 * try { await s3.putObject({ key, body }); }
 * catch (error) { if (error instanceof S3Error && error.s3Code === 'AccessDenied') alert(error.bucket); }
 */
export class S3Error extends Error {
  declare readonly code: 'SHARDWISE_S3';
  readonly operation: string;
  readonly shardId: string;
  readonly bucket: string;
  readonly key: string;
  readonly statusCode: number | undefined;
  readonly s3Code: string | undefined;
  readonly requestId: string | undefined;
  /** Read by the retry classifier (`defaultRetryable`). */
  readonly retryable: boolean;
  /** Read by the core (`provesNotSent`): a non-idempotent put may still go elsewhere. */
  readonly notSent: boolean;

  constructor(details: S3ErrorDetails, message?: string) {
    super(message ?? describeFailure(details), { cause: details.cause });
    brand(this, 'SHARDWISE_S3', 'S3Error');
    this.operation = details.operation;
    this.shardId = details.shardId;
    this.bucket = details.bucket;
    this.key = details.key;
    this.statusCode = details.statusCode;
    this.s3Code = details.s3Code;
    this.requestId = details.requestId;
    this.retryable = details.retryable;
    this.notSent = details.notSent === true;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return isS3Error(value);
  }
}

/** True for an {@link S3Error} from any copy of the package. */
export function isS3Error(value: unknown): value is S3Error {
  return hasCode(value, 'SHARDWISE_S3');
}

function describeFailure(d: S3ErrorDetails): string {
  const what = [d.s3Code, d.statusCode === undefined ? undefined : `(HTTP ${d.statusCode})`].filter(
    (part) => part !== undefined,
  );
  const cause = d.cause instanceof Error && d.cause.message !== '' ? d.cause.message : undefined;
  const detail = cause !== undefined && cause !== d.s3Code ? `: ${oneLine(cause)}` : '';
  return `S3 ${d.operation} of "${d.key}" to bucket "${d.bucket}" on shard "${d.shardId}" failed${
    what.length === 0 ? '' : ` with ${what.join(' ')}`
  }${detail}`;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** The class of each code's errors through `shardwise/s3`: the core's, and `S3Error`. */
export interface S3ErrorClasses extends ShardwiseErrorClasses {
  SHARDWISE_S3: S3Error;
}

/**
 * `isShardwiseError` as `shardwise/s3` exports it: the same function as the core's, typed to
 * narrow `SHARDWISE_S3` to `S3Error` as well.
 */
export const isShardwiseError = isBranded as ShardwiseErrorGuard<S3ErrorClasses>;
