/**
 * What makes an ingestion durable across the loader's own death: dead letters (every record not
 * written is appended to a file — or a sink of the caller's — and counts as settled only once it
 * is kept there) and checkpoints (the watermark — records settled in source order, and the
 * source position after them — saved atomically every `everyMs`, and once at the end, so a
 * loader killed at any moment resumes from the last one with `from`).
 */

import { ConfigError } from '../base/errors.js';
import type { Clock } from '../base/types.js';
import { bool, checkKnownKeys, checkObject, duration, fn } from '../base/validate.js';
import { checkDeadLetterOption, openDeadLetters } from '../dead-letters/sink.js';
import type { DeadLetterOption, DeadLetterSink } from '../dead-letters/types.js';
import { type Checkpoint, checkCheckpoint } from '../sources/checkpoint.js';
import { CheckpointWriter } from '../sources/checkpoint-writer.js';
import type { SourcePosition } from '../sources/position.js';
import type { Ledger } from './ledger.js';
import { Watermark } from './watermark.js';

/** `checkpoint`: where the watermark is saved, and how often (default every 1 000 ms). */
export interface CheckpointOptions {
  /** The checkpoint file (written to a temporary file beside it, `fsync`ed, then renamed). */
  path: string;
  /** Time between two saves, ms, on the balancer's clock (default 1 000). */
  everyMs?: number;
}

/** The durable options of an ingestion, checked. */
export interface DurableOptions {
  deadLetter: DeadLetterOption | undefined;
  deadLetterUncertain: boolean;
  checkpoint: { path: string; everyMs: number } | undefined;
  from: Checkpoint | undefined;
  onCheckpoint: ((index: number, position: SourcePosition | undefined) => void) | undefined;
}

/** The option names of durability (`ingest` takes them; write streams do not). */
export const DURABLE_KEYS = [
  'deadLetter',
  'deadLetterUncertain',
  'checkpoint',
  'from',
  'onCheckpoint',
] as const;

/** The durable options, checked at once (before anything is opened or read). */
export function checkDurable(field: string, options: Record<string, unknown>): DurableOptions {
  const deadLetter =
    options.deadLetter === undefined
      ? undefined
      : checkDeadLetterOption(options.deadLetter, `${field}.deadLetter`);
  const deadLetterUncertain =
    options.deadLetterUncertain === undefined
      ? false
      : bool(`${field}.deadLetterUncertain`, options.deadLetterUncertain);
  if (deadLetterUncertain && deadLetter === undefined) {
    throw new ConfigError(
      `${field}.deadLetterUncertain`,
      'needs a `deadLetter` to write the uncertain records to',
      true,
    );
  }
  let checkpoint: DurableOptions['checkpoint'];
  if (options.checkpoint !== undefined) {
    const at = `${field}.checkpoint`;
    checkObject(at, options.checkpoint);
    checkKnownKeys(at, options.checkpoint, ['path', 'everyMs']);
    const c = options.checkpoint as Partial<CheckpointOptions>;
    if (typeof c.path !== 'string' || c.path === '') {
      throw new ConfigError(`${at}.path`, 'must be a non-empty string (a file path)', c.path);
    }
    checkpoint = {
      path: c.path,
      everyMs: c.everyMs === undefined ? 1_000 : duration(`${at}.everyMs`, c.everyMs, true),
    };
  }
  const from =
    options.from === undefined || options.from === null
      ? undefined
      : checkCheckpoint(`${field}.from`, options.from);
  if (options.onCheckpoint !== undefined) fn(`${field}.onCheckpoint`, options.onCheckpoint);
  return {
    deadLetter,
    deadLetterUncertain,
    checkpoint,
    from,
    onCheckpoint: options.onCheckpoint as DurableOptions['onCheckpoint'],
  };
}

/**
 * The durability of one ingestion, open: its dead-letter sink (given to the ledger), its
 * watermark and its checkpoint saves. `close()` flushes the dead letters, then saves the last
 * checkpoint — in that order, so a checkpoint never passes a dead letter not yet on disk.
 */
export class Durability {
  /** The first checkpoint save that failed: the ingestion stops on it. */
  error: { error: unknown } | undefined;
  readonly #o: DurableOptions;
  readonly #ledger: Ledger<unknown>;
  readonly #clock: Clock;
  readonly #dead: DeadLetterSink | undefined;
  readonly #writer: CheckpointWriter | undefined;
  readonly #files: string[] | undefined;
  #cancelTimer: (() => void) | undefined;
  #lastIndex = -1;

  private constructor(
    options: DurableOptions,
    ledger: Ledger<unknown>,
    clock: Clock,
    dead: DeadLetterSink | undefined,
    files: string[] | undefined,
  ) {
    this.#o = options;
    this.#ledger = ledger;
    this.#clock = clock;
    this.#dead = dead;
    this.#files = files;
    this.#writer =
      options.checkpoint === undefined ? undefined : new CheckpointWriter(options.checkpoint.path);
    if (dead !== undefined) {
      ledger.deadLetters = { sink: dead, uncertain: options.deadLetterUncertain };
    }
    if (options.checkpoint !== undefined || options.onCheckpoint !== undefined) {
      ledger.watermark = new Watermark(options.from?.records ?? 0, options.from?.position);
    }
  }

  /**
   * Opens what the options ask for — the dead-letter file first (a path that cannot be written
   * rejects with a `DeadLetterError` before any record is read) — and wires it into `ledger`.
   * `source` gives the checkpoint its list of files when it has one (`readJsonl`).
   */
  static async open(
    field: string,
    options: DurableOptions,
    ledger: Ledger<unknown>,
    clock: Clock,
    source: object,
  ): Promise<Durability> {
    const dead =
      options.deadLetter === undefined
        ? undefined
        : await openDeadLetters(options.deadLetter, { field: `${field}.deadLetter`, clock });
    const files = (source as { files?: unknown }).files;
    const list =
      Array.isArray(files) && files.every((f) => typeof f === 'string')
        ? (files as string[])
        : undefined;
    return new Durability(options, ledger, clock, dead, list);
  }

  /** True when records must be told by their index (a watermark is kept). */
  get tracking(): boolean {
    return this.#ledger.watermark !== undefined;
  }

  /**
   * Checks that a source with positions starts where `from` says the load stands — a source
   * opened elsewhere would skip records, or send them twice — and starts the saves.
   */
  start(read: (() => SourcePosition) | undefined): void {
    const at = this.#o.from?.position;
    if (at !== undefined && read !== undefined) {
      const start = read();
      if (
        start.fileIndex !== at.fileIndex ||
        start.offset !== at.offset ||
        start.line !== at.line
      ) {
        throw new ConfigError(
          'from',
          `must be where the source starts: the source starts at file ${start.fileIndex}, offset ${start.offset}, line ${start.line}, and from.position is file ${at.fileIndex}, offset ${at.offset}, line ${at.line} — give the source the same from (readJsonl(files, { from }))`,
          this.#o.from,
        );
      }
    }
    if (this.#o.checkpoint !== undefined || this.#o.onCheckpoint !== undefined) this.#arm();
  }

  /** The ingestion is over: the dead letters flushed, then the last checkpoint saved. */
  async close(): Promise<void> {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (this.#dead !== undefined) {
      try {
        await this.#dead.close();
      } catch (error) {
        this.#ledger.deadLetterError ??= { error };
      }
    }
    this.#tick(true);
    await this.#writer?.idle();
  }

  #arm(): void {
    const everyMs = this.#o.checkpoint?.everyMs ?? 1_000;
    this.#cancelTimer = this.#clock.setTimer(() => {
      this.#cancelTimer = undefined;
      this.#tick(false);
      if (this.error === undefined) this.#arm();
    }, everyMs);
  }

  /** Saves the watermark (when it moved, or at the end) and tells `onCheckpoint`. */
  #tick(final: boolean): void {
    const watermark = this.#ledger.watermark;
    if (watermark === undefined) return;
    const index = watermark.index;
    if (index === this.#lastIndex && !final) return;
    this.#lastIndex = index;
    const position = watermark.position;
    const writer = this.#writer;
    if (writer !== undefined && this.error === undefined) {
      const s = this.#ledger.summary;
      const from = this.#o.from;
      const checkpoint = {
        position,
        records: index,
        written: (from?.written ?? 0) + s.written,
        failed: (from?.failed ?? 0) + s.failed,
        uncertain: (from?.uncertain ?? 0) + s.uncertain,
        ...(this.#files === undefined ? {} : { files: this.#files }),
      };
      writer.save(checkpoint).catch((error: unknown) => {
        if (this.error !== undefined) return;
        this.error = { error };
        this.#ledger.onCallbackError?.();
      });
    }
    try {
      this.#o.onCheckpoint?.(index, position);
    } catch (error) {
      this.#ledger.callbackThrew(error);
    }
  }
}
