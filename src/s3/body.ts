import { Readable } from 'node:stream';
import { ConfigError } from '../errors.js';
import { isAsyncIterable, isReadable } from '../guards.js';
import type { S3Body, S3BodyValue } from './types.js';

/** How an object body is sent: once (a stream) or on every attempt (bytes, text, a factory). */
export interface PreparedBody {
  /** Bytes, re-sent as they are on a retry. */
  bytes: Uint8Array | undefined;
  /** Builds a fresh body per attempt. */
  factory: (() => S3BodyValue) | undefined;
  /** A one-shot stream: sent once; a retry finds it consumed. */
  stream: Readable | undefined;
  /** Set once an attempt handed the stream to the SDK. */
  streamSent: boolean;
}

/** What one attempt sends: bytes (length known) or a stream. */
export type AttemptBody = Uint8Array | Readable;

/** Sorts a body into its kind, or throws a `ConfigError` naming `field`. */
export function prepareBody(field: string, body: S3Body): PreparedBody {
  if (typeof body === 'function') {
    return { bytes: undefined, factory: body, stream: undefined, streamSent: false };
  }
  const value = toAttemptBody(field, body);
  if (value instanceof Uint8Array) {
    return { bytes: value, factory: undefined, stream: undefined, streamSent: false };
  }
  return { bytes: undefined, factory: undefined, stream: value, streamSent: false };
}

/** The body of one attempt: the bytes again, a fresh value from the factory, or the stream once. */
export function attemptBody(field: string, body: PreparedBody): AttemptBody {
  if (body.bytes !== undefined) return body.bytes;
  if (body.factory !== undefined) return toAttemptBody(`${field}()`, body.factory());
  const stream = body.stream!;
  if (body.streamSent && !untouched(stream)) {
    throw new ConfigError(
      field,
      'is a one-shot stream that an earlier attempt consumed; pass a function returning a fresh body to make the put replayable',
      undefined,
      { given: false },
    );
  }
  body.streamSent = true;
  return stream;
}

/** True when the body is a one-shot stream that an attempt has started to read. */
export function streamConsumed(body: PreparedBody): boolean {
  return body.stream !== undefined && body.streamSent && !untouched(body.stream);
}

function toAttemptBody(field: string, value: unknown): AttemptBody {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return value;
  if (isReadable(value)) return value;
  if (isAsyncIterable(value)) return Readable.from(value);
  throw new ConfigError(
    field,
    'must be a string, a Uint8Array, a Readable, an async iterable, or a function returning one',
    value,
  );
}

/** True when a stream may still be sent whole: nothing read, not destroyed. */
function untouched(stream: Readable): boolean {
  return !stream.destroyed && !stream.readableDidRead && !stream.readableEnded;
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
