import { Readable } from 'node:stream';
import { isAsyncIterable, isReadable } from '../guards.js';
import type { HttpBody, HttpBodyValue } from './types.js';

/** How a request body is sent: once (a stream) or on every attempt (bytes, text, a factory). */
export interface PreparedBody {
  /** Bytes or text, re-sent as is on a retry; null for no body. */
  value: string | Uint8Array | null;
  /** Builds a fresh body per attempt. */
  factory: (() => HttpBodyValue) | undefined;
  /** A one-shot stream: sent once; a retry finds it consumed. */
  stream: Readable | undefined;
  /** Byte length when known without reading (bytes, text). */
  bytes: number | undefined;
}

/** Sorts a request body into its kind; undefined when it is none of the accepted kinds. */
export function prepareBody(body: HttpBody): PreparedBody | undefined {
  if (body === undefined || body === null) {
    return { value: null, factory: undefined, stream: undefined, bytes: 0 };
  }
  if (typeof body === 'string') {
    return { value: body, factory: undefined, stream: undefined, bytes: Buffer.byteLength(body) };
  }
  if (body instanceof Uint8Array) {
    return { value: body, factory: undefined, stream: undefined, bytes: body.byteLength };
  }
  if (typeof body === 'function') {
    return { value: null, factory: body, stream: undefined, bytes: undefined };
  }
  const stream = toStream(body);
  if (stream === undefined) return undefined;
  return { value: null, factory: undefined, stream, bytes: undefined };
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

function noop(): void {}

/**
 * Reads a response body in full, or stops at `limitBytes`: then the stream is destroyed (undici
 * closes that connection instead of reusing it) and `undefined` is returned. Listeners, not
 * async iteration: this is on every request's path.
 */
export function readBody(stream: Readable, limitBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        stream.on('error', noop);
        stream.destroy();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(
        chunks.length === 0
          ? Buffer.alloc(0)
          : chunks.length === 1
            ? chunks[0]!
            : Buffer.concat(chunks, size),
      );
    };
    const onError = (error: unknown) => {
      cleanup();
      stream.on('error', noop);
      reject(error);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}
