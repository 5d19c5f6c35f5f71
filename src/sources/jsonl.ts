/**
 * `readJsonl`: the lines of one or many JSONL files (`.jsonl.gz` decompressed as it goes), in
 * order, as an async iterable that reports positions (`SOURCE_POSITION`). It reads large chunks
 * and finds lines by their newline bytes — no stream events, no per-line buffer — so it keeps
 * ahead of an ingestion (bench/sources.bench.ts measures it against `readline`).
 */
import { ConfigError, messageOf } from '../base/errors.js';
import { checkKnownKeys, checkObject, positiveInt } from '../base/validate.js';
import type { Checkpoint } from './checkpoint.js';
import { type ChunkReader, isGzipName, openChunks } from './chunks.js';
import { SourceError } from './errors.js';
import { checkFileList } from './file-list.js';
import { resolveFrom, type StartAt } from './from.js';
import { type PositionedSource, SOURCE_POSITION, type SourcePosition } from './position.js';

/** Options of {@link readJsonl}. */
export interface ReadJsonlOptions {
  /**
   * Resume after this position: a `SourcePosition` (`{ fileIndex, offset, line }`, `file`
   * optional), or a checkpoint holding one (`await loadCheckpoint(path)`; `undefined` reads from
   * the start). Files before `fileIndex` are skipped; that file is read from `offset` (a `.gz` is
   * decompressed and `offset` bytes skipped). A position that does not fit the files — another
   * name at that index, a file shorter than `offset`, an offset inside a line — is a
   * `ConfigError` naming `from`.
   */
  from?: Partial<SourcePosition> | Checkpoint | undefined;
  /**
   * `false` (default): each line as a string, as it is in the file — pre-encoded JSON that
   * `http.ingest` sends untouched. `true`: each line parsed with `JSON.parse`; a line that is not
   * JSON stops the source with a `SourceError` naming its file and line.
   */
  parse?: boolean;
  /** Bytes read from a file at once (default 256 KiB: larger gains nothing here, and costs cache). */
  chunkBytes?: number;
  /**
   * The longest line accepted, bytes without its line ending (default 64 MiB): a file with no newlines (a JSON array, a
   * binary file) fails with a `SourceError` instead of filling the memory.
   */
  maxLineBytes?: number;
}

/** The async iterable {@link readJsonl} returns. */
export interface JsonlSource<T> extends AsyncIterable<T>, PositionedSource {
  /** The files read, in order, as given. */
  readonly files: readonly string[];
  [Symbol.asyncIterator](): AsyncIterator<T> & PositionedSource;
}

const DEFAULT_CHUNK_BYTES = 256 * 1024;
const DEFAULT_MAX_LINE_BYTES = 64 << 20;
const KNOWN = ['from', 'parse', 'chunkBytes', 'maxLineBytes'] as const;

/**
 * Reads JSONL files in order, one record per non-empty line: a string by default, parsed JSON
 * with `parse: true`. Lines may end in `\n` or `\r\n`; blank lines are skipped (and counted in
 * line numbers); a UTF-8 byte order mark at the start of a file is skipped. The source reports,
 * through `[SOURCE_POSITION]()`, the position just after the record it last gave, so an
 * ingestion can checkpoint it and a later run can resume with `from`.
 *
 * @example
 * import { loadCheckpoint, readJsonl } from 'shardwise/sources';
 *
 * const from = await loadCheckpoint('load.ckpt');
 * for await (const line of readJsonl(['day-1.jsonl.gz', 'day-2.jsonl.gz'], { from })) {
 *   // line: a string, one JSON document
 * }
 */
export function readJsonl(
  paths: string | readonly string[],
  options?: ReadJsonlOptions & { parse?: false },
): JsonlSource<string>;
export function readJsonl<T = unknown>(
  paths: string | readonly string[],
  options: ReadJsonlOptions & { parse: true },
): JsonlSource<T>;
export function readJsonl(
  paths: string | readonly string[],
  options: ReadJsonlOptions = {},
): JsonlSource<unknown> {
  return readLines(paths, options, undefined);
}

/**
 * {@link readJsonl} with each parsed line passed through `map` before it is given (other readers
 * of JSONL files, as `readDeadLetters`, build on it). A `map` that throws stops the source with a
 * `SourceError` naming the file and line, its message said, the position left before the line.
 */
export function readLines(
  paths: string | readonly string[],
  options: ReadJsonlOptions,
  map: ((value: unknown) => unknown) | undefined,
): JsonlSource<unknown> {
  const files = checkPaths(paths);
  checkObject('options', options);
  checkKnownKeys('', options, KNOWN);
  if (options.parse !== undefined && typeof options.parse !== 'boolean') {
    throw new ConfigError('parse', 'must be a boolean', options.parse);
  }
  const settings: Settings = {
    files,
    parse: options.parse === true,
    chunkBytes:
      options.chunkBytes === undefined
        ? DEFAULT_CHUNK_BYTES
        : positiveInt('chunkBytes', options.chunkBytes),
    maxLineBytes:
      options.maxLineBytes === undefined
        ? DEFAULT_MAX_LINE_BYTES
        : positiveInt('maxLineBytes', options.maxLineBytes),
    start: resolveFrom(options.from, files),
    map,
  };
  return new Jsonl(settings);
}

interface Settings {
  files: readonly string[];
  parse: boolean;
  chunkBytes: number;
  maxLineBytes: number;
  start: StartAt;
  map: ((value: unknown) => unknown) | undefined;
}

function checkPaths(paths: unknown): readonly string[] {
  if (typeof paths === 'string' && paths !== '') return Object.freeze([paths]);
  if (!Array.isArray(paths) || paths.length === 0) {
    throw new ConfigError(
      'paths',
      'must be a file path or a non-empty array of file paths (strings)',
      paths,
    );
  }
  return Object.freeze(checkFileList('paths', paths));
}

class Jsonl implements JsonlSource<unknown> {
  readonly files: readonly string[];
  private latest: JsonlReader | undefined;
  constructor(private readonly settings: Settings) {
    this.files = settings.files;
  }
  [Symbol.asyncIterator](): JsonlReader {
    this.latest = new JsonlReader(this.settings);
    return this.latest;
  }
  /** The position of the iterator made last (where a new one would start, before any). */
  [SOURCE_POSITION](): SourcePosition {
    return (this.latest ?? new JsonlReader(this.settings))[SOURCE_POSITION]();
  }
}

/** What `take()` returns when no whole line is in the buffer. */
const NEED: unique symbol = Symbol('need more bytes');
const DONE: IteratorResult<never> = Object.freeze({ done: true, value: undefined });
const NEWLINE = 10;
const CR = 13;

class JsonlReader implements AsyncIterator<unknown>, PositionedSource {
  private readonly files: readonly string[];
  private readonly parse: boolean;
  private readonly maxLineBytes: number;
  private readonly map: ((value: unknown) => unknown) | undefined;
  private buf: Buffer;
  /** The unread bytes are `buf[start, end)`; `buf[0]` is byte `base` of the file. */
  private start = 0;
  private end = 0;
  private base = 0;
  private fileIndex: number;
  /** Lines of the current file seen so far (the number of the last one). */
  private line = 0;
  private reader: ChunkReader | undefined;
  private eof = false;
  private done = false;
  private busy: Promise<IteratorResult<unknown>> | undefined;
  private pendingStart: StartAt | undefined;
  // The position after the last record given: three numbers, an object only when asked.
  private atFile: number;
  private atOffset: number;
  private atLine: number;

  constructor(settings: Settings) {
    this.files = settings.files;
    this.parse = settings.parse;
    this.maxLineBytes = settings.maxLineBytes;
    this.map = settings.map;
    this.buf = Buffer.allocUnsafe(settings.chunkBytes);
    this.pendingStart = settings.start;
    this.fileIndex = settings.start.fileIndex;
    this.atFile = settings.start.fileIndex;
    this.atOffset = settings.start.offset;
    this.atLine = settings.start.line;
  }

  [SOURCE_POSITION](): SourcePosition {
    return {
      file: this.files[this.atFile]!,
      fileIndex: this.atFile,
      offset: this.atOffset,
      line: this.atLine,
    };
  }

  next(): Promise<IteratorResult<unknown>> {
    if (this.busy !== undefined) return this.busy.then(() => this.next());
    if (this.reader !== undefined) {
      try {
        const value = this.take();
        if (value !== NEED) return Promise.resolve({ done: false, value });
      } catch (error) {
        return this.fail(error);
      }
    }
    if (this.done) return Promise.resolve(DONE);
    // A next() called while this one reads waits for it. Cleared by a callback, not inside
    // slow(): slow() may finish before it returns (the end of the last file).
    const pending = this.slow();
    this.busy = pending;
    const clear = () => {
      if (this.busy === pending) this.busy = undefined;
    };
    pending.then(clear, clear);
    return pending;
  }

  async return(): Promise<IteratorResult<unknown>> {
    await this.shut();
    return DONE;
  }

  /** The next whole line in the buffer as a record, skipping blank ones; `NEED` if none. */
  private take(): unknown {
    const buf = this.buf;
    const end = this.end;
    let start = this.start;
    while (start < end) {
      const nl = buf.indexOf(NEWLINE, start);
      if (nl === -1 || nl >= end) break;
      this.line++;
      const from = start;
      const stop = nl > from && buf[nl - 1] === CR ? nl - 1 : nl;
      start = nl + 1;
      if (stop - from > this.maxLineBytes) throw this.tooLong(this.line);
      if (stop === from || (buf[from]! <= 32 && blank(buf, from, stop))) continue;
      this.start = start;
      // Decoded first: a line that is not JSON leaves the position before it.
      const value = this.decode(from, stop);
      this.atFile = this.fileIndex;
      this.atOffset = this.base + start;
      this.atLine = this.line;
      return value;
    }
    this.start = start;
    return NEED;
  }

  /** The last line of a file that does not end with a newline; `NEED` if none. */
  private takeLast(): unknown {
    if (this.start >= this.end) return NEED;
    this.line++;
    const from = this.start;
    const stop = this.buf[this.end - 1] === CR ? this.end - 1 : this.end;
    this.start = this.end;
    if (stop - from > this.maxLineBytes) throw this.tooLong(this.line);
    if (stop === from || blank(this.buf, from, stop)) return NEED;
    const value = this.decode(from, stop);
    this.atFile = this.fileIndex;
    this.atOffset = this.base + this.end;
    this.atLine = this.line;
    return value;
  }

  private decode(from: number, stop: number): unknown {
    const text = this.buf.toString('utf8', from, stop);
    if (!this.parse) return text;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      // V8's message quotes the line, which may hold a secret: keep only where it broke.
      const at = /position (\d+)/.exec((error as Error).message);
      throw new SourceError(
        this.files[this.fileIndex]!,
        this.line,
        `not valid JSON${at === null ? '' : ` (at character ${at[1]})`}`,
      );
    }
    if (this.map === undefined) return value;
    try {
      return this.map(value);
    } catch (error) {
      throw new SourceError(this.files[this.fileIndex]!, this.line, messageOf(error));
    }
  }

  private async slow(): Promise<IteratorResult<unknown>> {
    try {
      for (;;) {
        if (this.done) return DONE;
        if (this.reader === undefined) {
          if (this.fileIndex >= this.files.length) {
            this.done = true;
            return DONE;
          }
          await this.open();
          continue;
        }
        const value = this.take();
        if (value !== NEED) return { done: false, value };
        if (this.eof) {
          const last = this.takeLast();
          await this.closeFile();
          if (last !== NEED) return { done: false, value: last };
          continue;
        }
        await this.fill();
      }
    } catch (error) {
      if (this.done) return DONE; // return() closed the file under a pending read
      await this.shut();
      throw error;
    }
  }

  private async open(): Promise<void> {
    const file = this.files[this.fileIndex]!;
    const start = this.pendingStart?.fileIndex === this.fileIndex ? this.pendingStart : undefined;
    this.pendingStart = undefined;
    const offset = start?.offset ?? 0;
    let reader: ChunkReader;
    try {
      // From the byte before the position: it must end a line, or the file changed.
      reader = await openChunks(file, offset > 0 ? offset - 1 : 0, isGzipName(file));
    } catch (error) {
      throw new SourceError(file, 0, 'could not be opened', error);
    }
    if (this.done) {
      await reader.close().catch(() => {});
      return;
    }
    this.reader = reader;
    this.base = offset > 0 ? offset - 1 : 0;
    this.start = 0;
    this.end = 0;
    this.eof = false;
    this.line = start?.line ?? 0;
    if (offset > 0) await this.checkStart(file, offset, start!.field);
    else {
      while (this.end < 3 && !this.eof) await this.fill();
      const b = this.buf;
      if (this.end >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) this.start = 3;
    }
  }

  /** The byte before a resumed position must be a newline (or the file must end there). */
  private async checkStart(file: string, offset: number, field: string): Promise<void> {
    while (this.end < 1 && !this.eof) await this.fill();
    if (this.end === 0) {
      throw new ConfigError(
        field,
        `is past the end of ${JSON.stringify(file)} (offset ${offset}): the file is shorter than when the position was taken`,
        undefined,
        { given: false },
      );
    }
    if (this.buf[0] === NEWLINE) {
      this.start = 1;
      return;
    }
    // Not a newline: only the end of the file may follow (a last line without one).
    this.start = 1;
    while (this.start >= this.end && !this.eof) await this.fill();
    if (this.start < this.end) {
      throw new ConfigError(
        field,
        `does not fall at the end of a line of ${JSON.stringify(file)} (offset ${offset}): the file changed since the position was taken`,
        undefined,
        { given: false },
      );
    }
  }

  /** Reads more bytes after the unread ones, moving them to the front or growing the buffer. */
  private async fill(): Promise<void> {
    let buf = this.buf;
    if (this.start > 0) {
      buf.copyWithin(0, this.start, this.end);
      this.base += this.start;
      this.end -= this.start;
      this.start = 0;
    }
    if (this.end === buf.length) {
      // A line of maxLineBytes may be followed by `\r\n`: past that, it is too long.
      if (this.end > this.maxLineBytes + 1) throw this.tooLong(this.line + 1);
      const grown = Buffer.allocUnsafe(Math.min(buf.length * 2, this.maxLineBytes + 2));
      buf.copy(grown, 0, 0, this.end);
      this.buf = buf = grown;
    }
    let n: number;
    try {
      n = await this.reader!.read(buf, this.end, buf.length - this.end);
    } catch (error) {
      if (this.done) throw error;
      const file = this.files[this.fileIndex]!;
      const zlib = /^Z_/.test(String((error as { code?: unknown }).code));
      throw new SourceError(
        file,
        this.line + 1,
        zlib ? 'could not be decompressed (a corrupt or cut-short .gz file)' : 'could not be read',
        error,
      );
    }
    if (n === 0) this.eof = true;
    else this.end += n;
  }

  private tooLong(line: number): SourceError {
    return new SourceError(
      this.files[this.fileIndex]!,
      line,
      `a line is longer than maxLineBytes (${this.maxLineBytes} bytes): is this a JSONL file?`,
    );
  }

  private async closeFile(): Promise<void> {
    const reader = this.reader;
    this.reader = undefined;
    this.fileIndex++;
    await reader?.close().catch(() => {});
  }

  private async shut(): Promise<void> {
    this.done = true;
    const reader = this.reader;
    this.reader = undefined;
    await reader?.close().catch(() => {});
  }

  private async fail(error: unknown): Promise<never> {
    await this.shut();
    throw error;
  }
}

/** True when `buf[from, stop)` holds only spaces, tabs and carriage returns. */
function blank(buf: Buffer, from: number, stop: number): boolean {
  for (let i = from; i < stop; i++) {
    const c = buf[i];
    if (c !== 32 && c !== 9 && c !== CR) return false;
  }
  return true;
}
