/**
 * The position protocol: how a source tells the ingestion where it stands, so the ingestion can
 * keep a watermark (the position below which every record has settled) and a resumed load can
 * start after it. A well-known symbol (`Symbol.for`), so a source from another copy of the
 * package — or one written by hand — speaks it too.
 */

/**
 * The key of the position method. A source's iterator (or the iterable itself) that has a
 * `[SOURCE_POSITION]()` method reports, after each `next()`, the position just after the record
 * that `next()` gave.
 */
export const SOURCE_POSITION: unique symbol = Symbol.for('shardwise.sourcePosition');

/**
 * Where a source stands: just after one record. `offset` is a byte offset in the file as read
 * (decompressed for `.gz`), just after the record's line and its newline; `line` the 1-based
 * number of that line (every line counts, empty ones too). Plain data: it goes into a checkpoint
 * as JSON.
 */
export interface SourcePosition {
  /** The file, as it was given to the source. */
  readonly file: string;
  /** Its index in the list of files the source reads, in order. */
  readonly fileIndex: number;
  /** Bytes of the file before the next record (decompressed bytes for `.jsonl.gz`). */
  readonly offset: number;
  /** The 1-based number of the line the last record came from; 0 before the first. */
  readonly line: number;
}

/**
 * A source (or its iterator) that reports positions.
 *
 * @example
 * const iterator = source[Symbol.asyncIterator]();
 * const read = positionReader(source, iterator);
 * const next = await iterator.next();
 * if (!next.done) console.log(read?.()); // { file, fileIndex, offset, line } after that record
 */
export interface PositionedSource {
  /**
   * The position just after the record the last `next()` gave; before the first record, where
   * the source starts (its `from`, or the start of its first file). A new object per call:
   * read it only when you keep it.
   */
  [SOURCE_POSITION](): SourcePosition;
}

/**
 * The position method of a source, bound to the object that has it — the iterator first, then the
 * iterable — or `undefined` when the source reports no positions (the ingestion then has only
 * record indexes: `onCheckpoint(index)`).
 */
export function positionReader(
  iterable: object,
  iterator: object,
): (() => SourcePosition) | undefined {
  for (const holder of [iterator, iterable]) {
    const method = (holder as Partial<PositionedSource>)[SOURCE_POSITION];
    if (typeof method === 'function') return () => method.call(holder);
  }
  return undefined;
}
