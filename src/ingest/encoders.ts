/**
 * How records become a batch body. An encoder turns one record into its text or bytes; the batch
 * joins them with the framing of the format (NDJSON: a newline after each record; JSON: an array).
 * Pre-encoded records — a string, a `Buffer` or any `Uint8Array` — pass through untouched: they
 * are the record's encoding already (a line read from a JSONL file, a message from a queue).
 * Objects go through {@link shapeStringifier}, which gives `JSON.stringify`'s text faster.
 */
import { shapeStringifier } from './json-shape.js';

/** One record's encoding: text (UTF-8 on the wire) or bytes. */
export type Chunk = string | Uint8Array;

/** The framing and the per-record encoding of one body format. */
export interface RecordEncoder<Rec> {
  /** `'ndjson'` or `'json'`. */
  readonly format: string;
  /** The `content-type` of a body. */
  readonly contentType: string;
  /** Written before the first record. */
  readonly open: string;
  /** Written after every record (`terminated`) or between records. */
  readonly separator: string;
  /** Written after the last record. */
  readonly close: string;
  /** True when `separator` follows every record (NDJSON), false when it only sits between them. */
  readonly terminated: boolean;
  /** One record's encoding, without separator. Throws for a record it cannot encode. */
  encode(record: Rec): Chunk;
}

/** Bytes the framing adds to a batch beyond each record's size (its length plus one separator). */
export function framingBytes(encoder: RecordEncoder<unknown>): number {
  const edges = encoder.open.length + encoder.close.length;
  return encoder.terminated ? edges : edges - encoder.separator.length;
}

/** A record as text or bytes: pre-encoded ones as they are, anything else as JSON. */
function chunkEncoder(): (record: unknown) => Chunk {
  const stringify = shapeStringifier();
  return (record) =>
    typeof record === 'string' || record instanceof Uint8Array ? record : stringify(record);
}

/** Newline-delimited JSON (`application/x-ndjson`): each record, then `\n`. */
export function ndjsonEncoder<Rec>(): RecordEncoder<Rec> {
  return {
    format: 'ndjson',
    contentType: 'application/x-ndjson',
    open: '',
    separator: '\n',
    close: '',
    terminated: true,
    encode: chunkEncoder(),
  };
}

/** A JSON array (`application/json`): `[`, the records separated by `,`, `]`. */
export function jsonArrayEncoder<Rec>(): RecordEncoder<Rec> {
  return {
    format: 'json',
    contentType: 'application/json',
    open: '[',
    separator: ',',
    close: ']',
    terminated: false,
    encode: chunkEncoder(),
  };
}

/** The UTF-8 length of an encoded record. */
export function chunkBytes(chunk: Chunk): number {
  return typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
}

/**
 * The default `size(record)` where the batch is not encoded here (the core's `ingest`): its
 * NDJSON line's length — a string's or bytes' length, else its JSON's — plus the newline.
 */
export function ndjsonSize(): (record: unknown) => number {
  const encode = chunkEncoder();
  return (record) => chunkBytes(encode(record)) + 1;
}

/**
 * Writes a batch body: `open`, each chunk and its separator, `close`, into one buffer of exactly
 * `bytes` bytes (the sum of the chunks' sizes plus the framing). Strings are joined and written
 * in one call: one UTF-8 conversion per batch, not one per record.
 */
export function writeBody(
  chunks: readonly Chunk[],
  encoder: RecordEncoder<unknown>,
  bytes: number,
  allText: boolean,
): Buffer {
  const body = Buffer.allocUnsafe(bytes);
  const { open, separator, close, terminated } = encoder;
  let at: number;
  if (allText) {
    const text =
      open + (chunks as string[]).join(separator) + (terminated ? separator : '') + close;
    at = body.write(text, 0, 'utf8');
  } else {
    at = body.write(open, 0, 'utf8');
    for (let i = 0; i < chunks.length; i++) {
      if (i > 0 && !terminated) at += body.write(separator, at, 'utf8');
      const chunk = chunks[i]!;
      if (typeof chunk === 'string') at += body.write(chunk, at, 'utf8');
      else {
        body.set(chunk, at);
        at += chunk.byteLength;
      }
      if (terminated) at += body.write(separator, at, 'utf8');
    }
    at += body.write(close, at, 'utf8');
  }
  // The sizes were measured on these very chunks: a mismatch would be a bug here, never a
  // record's fault, and must not send a body with stale bytes at its end.
  if (at !== bytes) throw new Error(`batch body is ${at} bytes, expected ${bytes}`);
  return body;
}
