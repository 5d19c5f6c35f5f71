import type { Readable } from 'node:stream';
import { ConfigError } from '../base/errors.js';
import { bodyOfAttempt, type Replayable, replayable } from '../transport/body.js';
import type { S3Body } from './types.js';

export { streamConsumed } from '../transport/body.js';
/** How an object body is sent across attempts (the transports' shared replayable body). */
export type PreparedBody = Replayable;

/** What one attempt sends: bytes (length known) or a stream. */
export type AttemptBody = Uint8Array | Readable;

/** Sorts a body into its kind, or throws a `ConfigError` naming `field`. An object needs a body. */
export function prepareBody(field: string, body: S3Body): PreparedBody {
  const prepared = body === null ? undefined : replayable(body, field);
  if (prepared === undefined) throw invalid(field, body);
  if (typeof prepared.value === 'string') prepared.value = Buffer.from(prepared.value, 'utf8');
  return prepared;
}

/** The body of one attempt: the bytes again, a fresh value from the factory, or the stream once. */
export function attemptBody(field: string, body: PreparedBody): AttemptBody {
  const value = bodyOfAttempt(field, body, 'put');
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value === null) throw invalid(`${field}()`, value);
  return value;
}

function invalid(field: string, value: unknown): ConfigError {
  return new ConfigError(
    field,
    'must be a string, a Uint8Array, a Readable, an async iterable, or a function returning one',
    value,
  );
}

/**
 * `iterator.next()`, or a rejection with `signal`'s reason once it aborts: a body that stalls
 * (a source that hung) cannot hold an attempt, its upload or `close()` past the attempt's end.
 */
export function nextUnless<T>(
  iterator: AsyncIterator<T>,
  signal: AbortSignal,
): Promise<IteratorResult<T>> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    iterator.next().then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * An error of the caller's body (a stream that failed, a disk read): marked `retryable: false`,
 * so no target is charged with it nor retried for it — S3 answered every call it got.
 */
export function bodyFailure(error: unknown): unknown {
  if (typeof error === 'object' && error !== null && Object.isExtensible(error)) {
    if ((error as { retryable?: unknown }).retryable === undefined) {
      Object.defineProperty(error, 'retryable', {
        value: false,
        enumerable: true,
        configurable: true,
      });
    }
  }
  return error;
}

/** One part of a multipart upload. */
export interface Part {
  partNumber: number;
  body: Uint8Array;
}

/**
 * Cuts a body into parts of exactly `partSize` bytes (the last one may be shorter; an empty body
 * gives one empty part). Bytes are sliced without copying; a stream is read part by part, so at
 * most about one part is buffered per caller of `next()`.
 */
export async function* partsOf(body: AttemptBody, partSize: number): AsyncGenerator<Part> {
  if (body instanceof Uint8Array) {
    if (body.byteLength === 0) {
      yield { partNumber: 1, body };
      return;
    }
    let n = 0;
    for (let at = 0; at < body.byteLength; at += partSize) {
      yield { partNumber: ++n, body: body.subarray(at, Math.min(at + partSize, body.byteLength)) };
    }
    return;
  }
  let n = 0;
  let chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    while (size + buf.length >= partSize) {
      const take = partSize - size;
      chunks.push(buf.subarray(0, take));
      buf = buf.subarray(take);
      yield { partNumber: ++n, body: Buffer.concat(chunks, partSize) };
      chunks = [];
      size = 0;
    }
    if (buf.length > 0) {
      chunks.push(buf);
      size += buf.length;
    }
  }
  if (size > 0 || n === 0) yield { partNumber: ++n, body: Buffer.concat(chunks, size) };
}

/** A body stream's own error, told apart from the call's (see {@link unlessBodyFails}). */
export class BodyFailed extends Error {
  constructor(cause: unknown) {
    super('the body failed', { cause });
  }
}

/**
 * `sending`, or a rejection with {@link BodyFailed} as soon as the `body` stream errors (a disk
 * read): the SDK pipes a stream without listening for its errors, so one would be thrown as an
 * uncaught exception while the request hung to its timeout. The attempt then ends, which aborts
 * the call.
 */
export function unlessBodyFails<R>(body: Readable, sending: Promise<R>): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const onError = (error: unknown): void => reject(new BodyFailed(error));
    body.once('error', onError);
    // Once the send settles nobody waits on the stream: a later error (a read the attempt's end
    // cut short) is dropped, not thrown as an uncaught exception.
    const settled = (): void => {
      body.off('error', onError);
      body.on('error', noop);
    };
    sending.then(
      (value) => {
        settled();
        resolve(value);
      },
      (error: unknown) => {
        settled();
        reject(error);
      },
    );
  });
}

function noop(): void {}
