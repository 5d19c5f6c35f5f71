/**
 * The checks of `putObject()` and `upload()` requests, once for both: the names they take, the
 * object's key, body, content type and metadata, the part size against S3's part count, and the
 * options of the run each call becomes. A mistake is a `ConfigError` naming the field, before any
 * attempt (counted in `stats().refused`).
 */

import type { RunOptions } from '../admission/run.js';
import { ConfigError } from '../base/errors.js';
import { checkKnownKeys, checkObject, nonNegativeInt, positiveInt } from '../base/validate.js';
import { CALL_RUN_KEYS, callRunOptions } from '../core/transport.js';
import { type PreparedBody, prepareBody } from './body.js';
import {
  checkHeaderText,
  checkKeyPath,
  checkMetadata,
  checkPartSize,
  S3_DEFAULTS,
  S3_LIMITS,
} from './options.js';
import type { S3PutRequest, S3UploadRequest } from './types.js';

const OBJECT_KEYS = ['key', 'body', 'contentType', 'metadata', 'routingKey', ...CALL_RUN_KEYS];
const PUT_KEYS = [...OBJECT_KEYS, 'contentLength'];
const UPLOAD_KEYS = [...OBJECT_KEYS, 'partSizeBytes', 'partConcurrency'];

/** One object across its attempts. */
export interface ObjectJob {
  /** The name the request's fields are checked under (`request`). */
  field: string;
  key: string;
  body: PreparedBody;
  contentType: string | undefined;
  metadata: Record<string, string> | undefined;
  contentLength: number | undefined;
  /** The request's own deadline for an upload's Create and Abort (its `timeoutMs`, ≤ 60 s). */
  cleanupDeadlineMs: number | undefined;
}

/** One object uploaded in parts (or in one put when it fits in one). */
export interface UploadJob extends ObjectJob {
  partSizeBytes: number;
  partConcurrency: number;
}

/** A `putObject()` request checked: its job, and its run's options. */
export function putJob(request: S3PutRequest): { job: ObjectJob; run: RunOptions } {
  checkObject('request', request);
  checkKnownKeys('request', request, PUT_KEYS);
  const job = objectJob('request', request);
  if (request.contentLength !== undefined) {
    job.contentLength = nonNegativeInt('request.contentLength', request.contentLength);
  }
  return { job, run: runOptions(request, job) };
}

/** An `upload()` request checked: its job (the balancer's part settings as defaults), its run's options. */
export function uploadJob(
  request: S3UploadRequest,
  defaults: { partSizeBytes: number; partConcurrency: number },
): { job: UploadJob; run: RunOptions } {
  checkObject('request', request);
  checkKnownKeys('request', request, UPLOAD_KEYS);
  const base = objectJob('request', request);
  const partSizeBytes =
    request.partSizeBytes === undefined
      ? defaults.partSizeBytes
      : checkPartSize('request.partSizeBytes', request.partSizeBytes);
  const partConcurrency =
    request.partConcurrency === undefined
      ? defaults.partConcurrency
      : positiveInt('request.partConcurrency', request.partConcurrency);
  const known = base.body.bytes;
  if (known !== undefined && Math.ceil(known / partSizeBytes) > S3_LIMITS.maxParts) {
    throw new ConfigError(
      'request.partSizeBytes',
      `is too small for a body of ${known} bytes: S3 allows at most ${S3_LIMITS.maxParts} parts`,
      partSizeBytes,
    );
  }
  const job: UploadJob = { ...base, partSizeBytes, partConcurrency };
  return { job, run: runOptions(request, job) };
}

function objectJob(field: string, request: S3PutRequest | S3UploadRequest): ObjectJob {
  if (typeof request.key !== 'string' || request.key === '') {
    throw new ConfigError(`${field}.key`, 'must be a non-empty string', request.key);
  }
  checkKeyPath(`${field}.key`, request.key);
  if (request.body === undefined || request.body === null) {
    throw new ConfigError(`${field}.body`, 'is required', request.body, { given: false });
  }
  if (request.contentType !== undefined)
    checkHeaderText(`${field}.contentType`, request.contentType);
  if (request.metadata !== undefined) checkMetadata(`${field}.metadata`, request.metadata);
  return {
    field,
    key: request.key,
    body: prepareBody(`${field}.body`, request.body),
    contentType: request.contentType,
    metadata: request.metadata,
    contentLength: undefined,
    cleanupDeadlineMs:
      typeof request.timeoutMs === 'number' && request.timeoutMs > 0
        ? Math.min(request.timeoutMs, S3_DEFAULTS.timeoutMs)
        : undefined,
  };
}

/**
 * Routed by `routingKey ?? key`; a PUT of the same key is idempotent, but a one-shot stream
 * cannot be sent twice (it is retried only while untouched, when the error proves nothing was
 * sent). The bytes declared to the balancer default to the body's known length.
 */
function runOptions(request: S3PutRequest | S3UploadRequest, job: ObjectJob): RunOptions {
  return callRunOptions(request, {
    idempotent: job.body.stream === undefined,
    key: request.routingKey ?? request.key,
    bytes: job.body.bytes ?? job.contentLength,
  });
}
