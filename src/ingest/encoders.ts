/**
 * How records become a batch body. An encoder writes one record's bytes at the end of the batch's
 * {@link ByteBuffer}; the batch adds the framing of the format (NDJSON: a newline after each
 * record; JSON: an array). Pre-encoded records — a string, a `Buffer` or any `Uint8Array` — pass
 * through untouched: they are the record's encoding already (a line read from a JSONL file, a
 * message from a queue). Objects go through {@link jsonWriter}, which writes `JSON.stringify`'s
 * bytes faster.
 */
import { ByteBuffer } from './bytes.js';
import { jsonWriter } from './json-shape.js';

/** The framing and the per-record encoding of one body format. */
export interface RecordEncoder<Rec> {
  /** `'ndjson'` or `'json'`. */
  readonly format: string;
  /** The `content-type` of a body. */
  readonly contentType: string;
  /** True when the separator follows every record (NDJSON `\n`); false for one between records (JSON `,`). */
  readonly terminated: boolean;
  /** The separator byte. */
  readonly separator: number;
  /** Bytes before the first record and after the last (JSON's brackets), else undefined. */
  readonly open: number | undefined;
  readonly close: number | undefined;
  /** Writes one record's encoding, without separator, at the end of `out`. Throws for a record it cannot encode. */
  write(record: Rec, out: ByteBuffer): void;
}

/**
 * Bytes the framing adds to a batch of at least one record beyond each record's size (its
 * encoding plus one separator).
 */
export function framingBytes(encoder: RecordEncoder<unknown>): number {
  const edges = (encoder.open === undefined ? 0 : 1) + (encoder.close === undefined ? 0 : 1);
  return encoder.terminated ? edges : edges - 1;
}

/** A record as it is when pre-encoded, else as JSON. */
function recordWriter(): (record: unknown, out: ByteBuffer) => void {
  const json = jsonWriter();
  return (record, out) => {
    if (typeof record === 'string') out.writeText(record);
    else if (record instanceof Uint8Array) out.writeBytes(record);
    else json(record, out);
  };
}

/** Newline-delimited JSON (`application/x-ndjson`): each record, then `\n`. */
export function ndjsonEncoder<Rec>(): RecordEncoder<Rec> {
  return {
    format: 'ndjson',
    contentType: 'application/x-ndjson',
    terminated: true,
    separator: 10,
    open: undefined,
    close: undefined,
    write: recordWriter(),
  };
}

/** A JSON array (`application/json`): `[`, the records separated by `,`, `]`. */
export function jsonArrayEncoder<Rec>(): RecordEncoder<Rec> {
  return {
    format: 'json',
    contentType: 'application/json',
    terminated: false,
    separator: 44,
    open: 91,
    close: 93,
    write: recordWriter(),
  };
}

/**
 * The default `size(record)` where the batch is not encoded here (the core's `ingest`): its
 * NDJSON line's length in bytes — a string's or bytes' as they are, else its JSON's — plus the
 * newline. Measured by writing it into a scratch buffer.
 */
export function ndjsonSize(): (record: unknown) => number {
  const write = recordWriter();
  let scratch = new ByteBuffer(4096);
  return (record) => {
    scratch.length = 0;
    write(record, scratch);
    const size = scratch.length + 1;
    // One huge record must not pin its bytes for the rest of the ingestion.
    if (scratch.buf.length > 1 << 20) scratch = new ByteBuffer(4096);
    return size;
  };
}
