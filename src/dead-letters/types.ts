/**
 * What the ingestion writes dead letters to: a file (`{ path }`) or the caller's own sink
 * (`{ write(record, outcome) }`), both behind one interface.
 */
import type { DeadLetter, DeadLetterOutcome } from './entry.js';

/**
 * Where dead letters go, as the ingestion drives it: `append` resolves once the dead letter is
 * kept (for a file: written and `fsync`ed), and only then has the record settled; it rejects with
 * a `DeadLetterError`, and the ingestion then stops.
 */
export interface DeadLetterSink {
  append(letter: DeadLetter): Promise<void>;
  /** Flushes what was appended and releases the sink. */
  close(): Promise<void>;
}

/**
 * A sink of the caller's own (a queue, a table, an object store): `write` is called once per dead
 * letter with the record as it was taken and the line's other fields (its error reduced and
 * redacted, as a file would hold it); the record settles when what `write` returns settles. A
 * throw or a rejection stops the ingestion with a `DeadLetterError` whose `cause` it is.
 *
 * @example
 * const kept: unknown[] = [];
 * const deadLetter: CustomDeadLetterSink = { write: (record, outcome) => { kept.push({ record, ...outcome }); } };
 */
export interface CustomDeadLetterSink<Rec = unknown> {
  write(record: Rec, outcome: DeadLetterOutcome): unknown;
  /** Called once when the ingestion ends; awaited. */
  close?(): unknown;
}

/** A dead-letter file: its path and batching window (see `DeadLetterFileOptions`). */
export interface DeadLetterFileSpec {
  path: string;
  /** ms the first line of a batch waits for others before one write and one `fsync` (default 50). */
  windowMs?: number;
  /** Lines that close a batch before its window ends (default 1000). */
  maxLines?: number;
}

/** The `deadLetter` option: a file, or the caller's own sink. */
export type DeadLetterOption<Rec = unknown> = DeadLetterFileSpec | CustomDeadLetterSink<Rec>;
