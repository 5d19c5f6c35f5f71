/**
 * Request bodies as both transports send them: bytes or text are re-sent as they are on every
 * attempt, a function builds a fresh body per attempt, and a stream (or async iterable) is
 * one-shot — a retry may reuse it only while nothing of it was read. A `Compressed` body is bytes
 * that carry their encoding and their length before compression.
 */
import { Readable } from 'node:stream';
import { ConfigError } from '../base/errors.js';
import { isAsyncIterable, isReadable } from '../base/guards.js';
import { type Compressed, isCompressed } from './compression.js';

/** What one attempt sends: text, bytes, a stream, or nothing. */
export type AttemptBody = string | Uint8Array | Readable | null;

/** A body sorted by kind, kept across a run's attempts. */
export interface Replayable {
  /** Text or bytes, re-sent as they are; null for no body; undefined for the other kinds. */
  value: string | Uint8Array | null | undefined;
  /** Builds a fresh body per attempt. */
  factory: (() => unknown) | undefined;
  /** A one-shot stream: sent once; a retry finds it consumed. */
  stream: Readable | undefined;
  /** Set once an attempt handed the stream over. */
  streamSent: boolean;
  /** Byte length when known without reading (text, bytes, no body): as sent. */
  bytes: number | undefined;
  /** The body was given compressed: its encoding (if it was compressed) and raw length. */
  compressed: Compressed | undefined;
}

/**
 * Sorts a body into its kind; undefined when it is none of the accepted kinds. A stream already
 * read (or ended, or destroyed) before the call is a `ConfigError` naming `field`: sent as it is,
 * it would store an empty or truncated object and report success.
 */
export function replayable(body: unknown, field = 'body'): Replayable | undefined {
  if (body === undefined || body === null) return sorted(null, undefined, undefined, 0);
  if (typeof body === 'string') return sorted(body, undefined, undefined, Buffer.byteLength(body));
  if (body instanceof Uint8Array) return sorted(body, undefined, undefined, body.byteLength);
  if (isCompressed(body)) {
    const value = sorted(body.body, undefined, undefined, body.wireBytes);
    value.compressed = body;
    return value;
  }
  if (typeof body === 'function')
    return sorted(undefined, body as () => unknown, undefined, undefined);
  const stream = toStream(body);
  if (stream === undefined) return undefined;
  if (!untouched(stream)) {
    throw new ConfigError(
      field,
      'is a stream that was already read, ended or destroyed: pass a fresh one (or a function returning one)',
      undefined,
      { given: false },
    );
  }
  return sorted(undefined, undefined, stream, undefined);
}

/**
 * The body of one attempt: the value again, a fresh one from the factory, or the stream once.
 * A stream an earlier attempt started to read is a `ConfigError` naming `field`.
 */
export function bodyOfAttempt(field: string, body: Replayable, what: string): AttemptBody {
  if (body.value !== undefined) return body.value;
  if (body.factory !== undefined) {
    const value = body.factory();
    if (typeof value === 'string' || value instanceof Uint8Array) return value;
    const stream = toStream(value);
    if (stream === undefined) {
      throw new ConfigError(
        `${field}()`,
        'must return a string, a Uint8Array, a Readable or an async iterable',
        value,
      );
    }
    return stream;
  }
  const stream = body.stream!;
  if (body.streamSent && !untouched(stream)) {
    throw new ConfigError(
      field,
      `is a one-shot stream that an earlier attempt consumed; pass a function returning a fresh body to make the ${what} replayable`,
      undefined,
      { given: false },
    );
  }
  body.streamSent = true;
  return stream;
}

/** True when the body is a one-shot stream that an attempt has started to read. */
export function streamConsumed(body: Replayable): boolean {
  return body.stream !== undefined && body.streamSent && !untouched(body.stream);
}

/** A Readable for a stream or an async iterable (so "was it read?" can be answered). */
export function toStream(body: unknown): Readable | undefined {
  if (isReadable(body)) return body;
  if (isAsyncIterable(body)) return Readable.from(body as AsyncIterable<unknown>);
  return undefined;
}

/** True when a stream may still be sent whole: nothing read, not destroyed. */
export function untouched(stream: Readable): boolean {
  return !stream.destroyed && !stream.readableDidRead && !stream.readableEnded;
}

function sorted(
  value: string | Uint8Array | null | undefined,
  factory: (() => unknown) | undefined,
  stream: Readable | undefined,
  bytes: number | undefined,
): Replayable {
  return { value, factory, stream, streamSent: false, bytes, compressed: undefined };
}
