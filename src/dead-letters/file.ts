/**
 * The dead-letter file: NDJSON lines appended in batches, each batch written with one write and
 * made durable with one `fsync` (group commit, as a database log does), so dead-lettering many
 * records costs one disk flush per window, not one per record, and `append` still resolves only
 * once its line is on the disk.
 */
import { dirname } from 'node:path';
import { ConfigError } from '../base/errors.js';
import { systemClock, wallClock } from '../base/runtime.js';
import type { Clock } from '../base/types.js';
import {
  checkKnownKeys,
  checkObject,
  checkObjectLike,
  duration,
  fn,
  positiveInt,
} from '../base/validate.js';
import { syncDirectory } from '../sources/atomic-file.js';
import { type DurableFile, type DurableFs, nodeFs } from '../sources/file-system.js';
import { type DeadLetter, ErrorInfoMemo, encodeLine } from './entry.js';
import { DeadLetterError } from './error.js';
import type { DeadLetterSink } from './types.js';

/** Options of {@link DeadLetterFile.open}. */
export interface DeadLetterFileOptions {
  /**
   * How long the first line of a batch waits for others before the batch is written and
   * `fsync`ed, ms (default 50). The window bounds the extra time a dead-lettered record takes to
   * settle; 0 still groups the lines appended in one turn of the event loop.
   */
  windowMs?: number;
  /** A batch holding this many lines is written at once, before its window ends (default 1000). */
  maxLines?: number;
  /** The clock of the window's timer (default: the system clock; the balancer's, in `ingest`). */
  clock?: Clock;
  /** The wall clock of each line's `at`, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** The file system (default Node's); tests give one that counts `fsync`s or fails. */
  fs?: DurableFs;
}

/** The defaults of the batching window. */
export const DEAD_LETTER_DEFAULTS = { windowMs: 50, maxLines: 1000 } as const;

const KNOWN = ['windowMs', 'maxLines', 'clock', 'now', 'fs'] as const;

/** Lines that share one write and one `fsync`, and the promise their `append`s return. */
interface Batch {
  lines: string[];
  done: Promise<void>;
  resolve: () => void;
  reject: (error: DeadLetterError) => void;
}

/**
 * Appends dead letters to a file, one NDJSON line each (see `entry.ts` for the line). Lines
 * appended within `windowMs` of a batch's first line, up to `maxLines`, are written together and
 * share one `fsync`; batches that close while an `fsync` runs wait for it, then share the next.
 * `append` resolves once its line is on the disk: only then has the record settled.
 *
 * @example
 * const letters = await DeadLetterFile.open('failed.ndjson');
 * await letters.append({ record, error, outcome: 'failed' }); // on the disk now
 * await letters.close();
 */
export class DeadLetterFile implements DeadLetterSink {
  /** The file appended to. */
  readonly path: string;
  private readonly file: DurableFile;
  private readonly windowMs: number;
  private readonly maxLines: number;
  private readonly clock: Clock;
  private readonly now: () => number;
  /** The batch lines are appended to now, if any. */
  private open: Batch | undefined;
  private cancelTimer: (() => void) | undefined;
  /** Closed batches waiting for the writer. */
  private readonly sealed: Batch[] = [];
  private writing: Promise<void> | undefined;
  private failure: DeadLetterError | undefined;
  private closing: Promise<void> | undefined;
  private synced = 0;
  private readonly errors = new ErrorInfoMemo();

  private constructor(path: string, file: DurableFile, options: Required<DeadLetterFileOptions>) {
    this.path = path;
    this.file = file;
    this.windowMs = options.windowMs;
    this.maxLines = options.maxLines;
    this.clock = options.clock;
    this.now = options.now;
  }

  /**
   * Opens `path` to append (created if absent; a resumed load appends to the same file), and
   * makes its directory entry durable. A path that cannot be written rejects with a
   * `DeadLetterError` now — before any record depends on it.
   */
  static async open(path: string, options: DeadLetterFileOptions = {}): Promise<DeadLetterFile> {
    if (typeof path !== 'string' || path === '') {
      throw new ConfigError('path', 'must be a non-empty string (a file path)', path);
    }
    checkObject('options', options);
    checkKnownKeys('', options, KNOWN);
    if (options.clock !== undefined) checkObjectLike('clock', options.clock);
    if (options.now !== undefined) fn('now', options.now);
    if (options.fs !== undefined) checkObjectLike('fs', options.fs);
    const settings: Required<DeadLetterFileOptions> = {
      windowMs:
        options.windowMs === undefined
          ? DEAD_LETTER_DEFAULTS.windowMs
          : duration('windowMs', options.windowMs),
      maxLines:
        options.maxLines === undefined
          ? DEAD_LETTER_DEFAULTS.maxLines
          : positiveInt('maxLines', options.maxLines),
      clock: options.clock ?? systemClock,
      now: options.now ?? wallClock,
      fs: options.fs ?? nodeFs,
    };
    let file: DurableFile;
    try {
      file = await settings.fs.open(path, 'a');
    } catch (error) {
      throw new DeadLetterError(path, 'could not be opened to append', error);
    }
    try {
      await syncDirectory(dirname(path), settings.fs);
    } catch (error) {
      await file.close().catch(() => {});
      throw new DeadLetterError(path, 'could not be made durable (fsync of its directory)', error);
    }
    return new DeadLetterFile(path, file, settings);
  }

  /** Lines on the disk so far (appended, written and `fsync`ed). */
  get written(): number {
    return this.synced;
  }

  /**
   * Appends one dead letter. Resolves once its line is written and `fsync`ed (within `windowMs`,
   * plus the disk's time); rejects with a `DeadLetterError` if the record cannot be encoded, the
   * file is closed, or the write or `fsync` fails — then every later `append` rejects too.
   */
  append(letter: DeadLetter): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closing !== undefined) {
      return Promise.reject(new DeadLetterError(this.path, 'is closed: no line can be appended'));
    }
    let line: string;
    try {
      line = encodeLine(letter, new Date(this.now()).toISOString(), this.errors.jsonOf(letter));
    } catch (error) {
      return Promise.reject(
        new DeadLetterError(this.path, 'could not keep a record that has no JSON form', error),
      );
    }
    this.open ??= newBatch();
    const batch = this.open;
    batch.lines.push(line);
    if (batch.lines.length >= this.maxLines) this.seal();
    else if (this.cancelTimer === undefined) {
      this.cancelTimer = this.clock.setTimer(() => {
        this.cancelTimer = undefined;
        this.seal();
      }, this.windowMs);
    }
    return batch.done;
  }

  /** Writes and `fsync`s the lines appended so far without waiting for their window. */
  flush(): Promise<void> {
    const last = this.open;
    this.seal();
    return last?.done ?? this.writing ?? Promise.resolve();
  }

  /**
   * Flushes what was appended and closes the file. Rejects with the `DeadLetterError` that failed
   * the file, if one did.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.seal();
      while (this.writing !== undefined) await this.writing;
      await this.file.close().catch(() => {});
      if (this.failure !== undefined) throw this.failure;
    })();
    return this.closing;
  }

  /** Closes the open batch and hands it to the writer. */
  private seal(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    const batch = this.open;
    if (batch === undefined) return;
    this.open = undefined;
    this.sealed.push(batch);
    this.writing ??= this.write();
  }

  /** Writes the sealed batches in order: those sealed while one is on its way go together next. */
  private async write(): Promise<void> {
    while (this.sealed.length > 0) {
      const batches = this.sealed.splice(0);
      if (this.failure === undefined) {
        const text = batches.length === 1 ? batches[0]!.lines.join('') : joinAll(batches);
        let step = 'could not be written';
        try {
          await this.file.writeFile(text);
          step = 'could not be made durable (fsync)';
          await this.file.sync();
          for (const b of batches) this.synced += b.lines.length;
        } catch (error) {
          this.failure = new DeadLetterError(this.path, step, error);
        }
      }
      for (const b of batches) {
        if (this.failure === undefined) b.resolve();
        else b.reject(this.failure);
      }
    }
    this.writing = undefined;
  }
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (error: DeadLetterError) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A batch whose appenders all stopped listening must not crash the process when it fails.
  done.catch(() => {});
  return { lines: [], done, resolve, reject };
}

function joinAll(batches: readonly Batch[]): string {
  let text = '';
  for (const b of batches) text += b.lines.join('');
  return text;
}
