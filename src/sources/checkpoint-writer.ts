/**
 * The one owner of a checkpoint file during a load. Saves never overlap: two atomic saves that
 * ran at once could rename in the wrong order and leave the older checkpoint in place. While one
 * save runs, the newest checkpoint asked for waits (an older one waiting is dropped: only the
 * newest matters), and is saved next.
 */
import { ConfigError } from '../base/errors.js';
import { wallClock } from '../base/runtime.js';
import { checkKnownKeys, checkObject, checkObjectLike, fn } from '../base/validate.js';
import { type Checkpoint, type CheckpointInput, writeCheckpoint } from './checkpoint.js';
import { type DurableFs, nodeFs } from './file-system.js';

interface Waiting {
  checkpoint: CheckpointInput;
  done: Promise<Checkpoint>;
  resolve: (saved: Checkpoint) => void;
  reject: (error: unknown) => void;
}

/**
 * Saves checkpoints to one file, one at a time, newest first.
 *
 * @example
 * const checkpoints = new CheckpointWriter('load.ckpt');
 * checkpoints.save({ position, records, written, failed, uncertain }).catch(report); // every everyMs
 * await checkpoints.save(final); // at the end: resolves once it is on the disk
 */
export class CheckpointWriter {
  /** The checkpoint file. */
  readonly path: string;
  private readonly fs: DurableFs;
  private readonly now: () => number;
  private running: Promise<unknown> | undefined;
  private waiting: Waiting | undefined;
  private saved: Checkpoint | undefined;

  constructor(path: string, options: { fs?: DurableFs; now?: () => number } = {}) {
    if (typeof path !== 'string' || path === '') {
      throw new ConfigError('path', 'must be a non-empty string (a file path)', path);
    }
    checkObject('options', options);
    checkKnownKeys('', options, ['fs', 'now']);
    if (options.now !== undefined) fn('now', options.now);
    if (options.fs !== undefined) checkObjectLike('fs', options.fs);
    this.path = path;
    this.fs = options.fs ?? nodeFs;
    this.now = options.now ?? wallClock;
  }

  /** The last checkpoint saved by this writer, if any. */
  get last(): Checkpoint | undefined {
    return this.saved;
  }

  /**
   * Saves `checkpoint` once the save running now (if any) has finished. Resolves with what was
   * saved — this checkpoint, or a newer one asked for while it waited (it then was not written:
   * the newer one covers it). Rejects with a `CheckpointError` if that save failed; the next
   * `save` tries again.
   */
  save(checkpoint: CheckpointInput): Promise<Checkpoint> {
    if (this.waiting !== undefined) {
      this.waiting.checkpoint = checkpoint;
      return this.waiting.done;
    }
    let resolve!: (saved: Checkpoint) => void;
    let reject!: (error: unknown) => void;
    const done = new Promise<Checkpoint>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // A periodic save nobody awaits must not crash the process when it fails.
    done.catch(() => {});
    this.waiting = { checkpoint, done, resolve, reject };
    this.running ??= this.run();
    return done;
  }

  /** Resolves once no save runs or waits (a failed one included). */
  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  private async run(): Promise<void> {
    while (this.waiting !== undefined) {
      const next = this.waiting;
      this.waiting = undefined;
      try {
        this.saved = await writeCheckpoint(this.path, next.checkpoint, this.fs, this.now);
        next.resolve(this.saved);
      } catch (error) {
        next.reject(error);
      }
    }
    this.running = undefined;
  }
}
