import { describe, expect, it } from 'vitest';
import { isShardwiseError, PushBackError } from '../../src/base/errors.js';
import { defaultRetryable, provesNotSent } from '../../src/retry/options.js';
import { classifyS3Error, type S3CallInfo, S3Error } from '../../src/s3/index.js';

/** Unit tests of the classifier on SDK-shaped errors (their shape, not a transport). */
const info: S3CallInfo = {
  operation: 'PutObject',
  shardId: 'eu-1',
  bucket: 'ingest-eu',
  key: 'rows/1.jsonl',
  defaultRetryAfterMs: 1_000,
  maxRetryAfterMs: 60_000,
  wallClock: () => Date.parse('Wed, 21 Oct 2015 07:27:00 GMT'),
};

function sdkError(
  name: string,
  status: number,
  headers: Record<string, string> = {},
): Record<string, unknown> {
  const error = new Error(`${name} message`) as Error & Record<string, unknown>;
  error.name = name;
  error.$fault = status >= 500 ? 'server' : 'client';
  error.$metadata = { httpStatusCode: status, requestId: 'REQ123' };
  error.$response = { statusCode: status, headers };
  return error;
}

describe('classifyS3Error', () => {
  it('SlowDown with Retry-After: 2 → PushBackError of 2000 ms', () => {
    const error = {
      name: 'SlowDown',
      $metadata: { httpStatusCode: 503 },
      $response: { headers: { 'retry-after': '2' } },
    };
    const mapped = classifyS3Error(error, info);
    expect(mapped).toBeInstanceOf(PushBackError);
    expect((mapped as PushBackError).retryAfterMs).toBe(2_000);
    // The SDK error is reduced to its identity: no raw request or response stays reachable.
    const cause = (mapped as PushBackError).cause as Error & Record<string, unknown>;
    expect(cause).toBeInstanceOf(Error);
    expect(cause.name).toBe('SlowDown');
    expect(cause.statusCode).toBe(503);
    expect(cause).not.toHaveProperty('$response');
    expect(cause).not.toHaveProperty('$metadata');
    expect((mapped as Error).message).toContain('"ingest-eu"');
    expect(mapped).toMatchObject({ statusCode: 503, s3Code: 'SlowDown' });
  });

  it('SlowDown without Retry-After → the default hold; an HTTP-date and the cap are honoured', () => {
    expect((classifyS3Error(sdkError('SlowDown', 503), info) as PushBackError).retryAfterMs).toBe(
      1_000,
    );
    const dated = sdkError('SlowDown', 503, { 'Retry-After': 'Wed, 21 Oct 2015 07:28:00 GMT' });
    expect((classifyS3Error(dated, info) as PushBackError).retryAfterMs).toBe(60_000);
    const long = sdkError('SlowDown', 503, { 'retry-after': '3600' });
    expect((classifyS3Error(long, info) as PushBackError).retryAfterMs).toBe(60_000);
  });

  it('503 ServiceUnavailable, 429, and any 503 with Retry-After push back', () => {
    expect(classifyS3Error(sdkError('ServiceUnavailable', 503), info)).toBeInstanceOf(
      PushBackError,
    );
    expect(classifyS3Error(sdkError('TooManyRequests', 429), info)).toBeInstanceOf(PushBackError);
    const other = classifyS3Error(sdkError('Unknown', 503, { 'retry-after': '5' }), info);
    expect((other as PushBackError).retryAfterMs).toBe(5_000);
  });

  it('5xx → retryable S3Error; a 503 with no code or Retry-After is a plain 5xx', () => {
    for (const [name, status] of [
      ['InternalError', 500],
      ['Unknown', 503],
      ['BadGateway', 502],
    ] as const) {
      const mapped = classifyS3Error(sdkError(name, status), info) as S3Error;
      expect(mapped).toBeInstanceOf(S3Error);
      expect(mapped).toMatchObject({ statusCode: status, s3Code: name, retryable: true });
      expect(defaultRetryable(mapped)).toBe(true);
      expect(mapped.requestId).toBe('REQ123');
    }
  });

  it('4xx → S3Error with retryable: false, naming bucket, key and code', () => {
    for (const [name, status] of [
      ['NoSuchBucket', 404],
      ['AccessDenied', 403],
      ['InvalidArgument', 400],
      ['EntityTooLarge', 400],
    ] as const) {
      const mapped = classifyS3Error(sdkError(name, status), info) as S3Error;
      expect(mapped).toBeInstanceOf(S3Error);
      expect(mapped.retryable).toBe(false);
      expect(defaultRetryable(mapped)).toBe(false);
      expect(mapped.code).toBe('SHARDWISE_S3');
      expect(isShardwiseError(mapped)).toBe(true);
      expect(mapped.message).toBe(
        `S3 PutObject of "rows/1.jsonl" to bucket "ingest-eu" on shard "eu-1" failed with ${name} (HTTP ${status}): ${name} message`,
      );
    }
    // S3's RequestTimeout is a 400 about the connection, not the request: worth another target.
    expect((classifyS3Error(sdkError('RequestTimeout', 400), info) as S3Error).retryable).toBe(
      true,
    );
  });

  it('socket errors → retryable; connection refused also proves nothing was sent', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
      code: 'ECONNREFUSED',
      $metadata: { attempts: 1 },
    });
    const mapped = classifyS3Error(refused, info) as S3Error;
    expect(mapped).toMatchObject({ s3Code: 'ECONNREFUSED', retryable: true, notSent: true });
    expect(provesNotSent(mapped)).toBe(true);
    const reset = classifyS3Error(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), info);
    expect(reset).toMatchObject({ retryable: true, notSent: false });
    expect(provesNotSent(reset)).toBe(false);
  });

  it('leaves other errors alone (aborts, non-SDK errors, primitives)', () => {
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
    expect(classifyS3Error(abort, info)).toBe(abort);
    const plain = new Error('plain');
    expect(classifyS3Error(plain, info)).toBe(plain);
    expect(classifyS3Error('text', info)).toBe('text');
  });

  it('S3Error is recognised by its brand, from any copy', () => {
    const forged = Object.defineProperty({}, Symbol.for('shardwise.error'), {
      value: 'SHARDWISE_S3',
    });
    expect(forged).toBeInstanceOf(S3Error);
    expect(new Error('x')).not.toBeInstanceOf(S3Error);
  });
});
