/**
 * Checkpoints as files: where a load stands (the watermark position and its counts), saved
 * atomically so a loader killed at any moment leaves the last complete checkpoint, and loaded to
 * resume (`readJsonl(files, { from: await loadCheckpoint(path) })`).
 */
import { readFile } from 'node:fs/promises';
import { ConfigError, messageOf } from '../base/errors.js';
import { wallClock } from '../base/runtime.js';
import { checkKnownKeys, checkObject, nonNegativeInt } from '../base/validate.js';
import { writeFileAtomic } from './atomic-file.js';
import { CheckpointError } from './errors.js';
import { checkFileList } from './file-list.js';
import { type DurableFs, nodeFs } from './file-system.js';
import type { SourcePosition } from './position.js';

/** The checkpoint format this version writes and reads. */
export const CHECKPOINT_VERSION = 1;

/**
 * Where a load stands. `records` is the watermark index: the records the source gave, counted
 * from the start of the load (resumed loads included), that have all settled — written, or
 * failed (or uncertain) into the dead letters. `position` is the source position just after the
 * last of them, `undefined` when none has settled or the source reports no positions. `written`,
 * `failed` and `uncertain` count outcomes over the whole load so far.
 *
 * @example
 * const checkpoint = await loadCheckpoint('load.ckpt');
 * for await (const line of readJsonl(files, { from: checkpoint })) … // resumes after it
 */
export interface Checkpoint {
  version: 1;
  position: SourcePosition | undefined;
  records: number;
  written: number;
  failed: number;
  uncertain: number;
  /** When it was saved: an ISO 8601 date (wall clock). */
  savedAt: string;
  /** The files of the load, in order, as they were given (optional). */
  files?: string[];
}

/** What `saveCheckpoint` takes: a checkpoint, with `version` and `savedAt` filled in if absent. */
export type CheckpointInput = Omit<Checkpoint, 'version' | 'savedAt'> & {
  version?: 1;
  savedAt?: string;
};

/** The names a checkpoint holds (a `from` naming another is rejected, as options are). */
export const CHECKPOINT_KEYS = [
  'version',
  'position',
  'records',
  'written',
  'failed',
  'uncertain',
  'savedAt',
  'files',
] as const;

const POSITION_KEYS = ['file', 'fileIndex', 'offset', 'line'] as const;

/**
 * Reads the checkpoint saved at `path`: `undefined` when there is no file (a first run). A file
 * that is not a checkpoint rejects with a `CheckpointError` naming it — never `undefined`, which
 * would quietly start the load over.
 *
 * @example
 * const from = await loadCheckpoint('load.ckpt'); // undefined on the first run
 * await balancer.ingest(readJsonl(files, { from }), { send });
 */
export async function loadCheckpoint(path: string): Promise<Checkpoint | undefined> {
  if (typeof path !== 'string' || path === '') {
    throw new ConfigError('path', 'must be a non-empty string (a file path)', path);
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    throw new CheckpointError(path, `checkpoint ${path} could not be read: ${messageOf(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw corrupt(path, 'not JSON (cut short, or not a checkpoint)');
  }
  try {
    return checkCheckpoint('checkpoint', value);
  } catch (error) {
    throw corrupt(path, messageOf(error));
  }
}

/**
 * Saves `checkpoint` at `path` atomically and durably: a temporary file in the same directory,
 * `fsync`, rename over `path`, `fsync` of the directory. A crash at any moment leaves the previous
 * checkpoint or this one. Resolves with the checkpoint as saved (`version` and `savedAt` filled
 * in); a failure rejects with a `CheckpointError` naming `path`, the previous checkpoint intact.
 *
 * @example
 * await saveCheckpoint('load.ckpt', { position, records, written, failed, uncertain: 0 });
 */
export function saveCheckpoint(path: string, checkpoint: CheckpointInput): Promise<Checkpoint> {
  return writeCheckpoint(path, checkpoint, nodeFs, wallClock);
}

/** {@link saveCheckpoint} with its file system and wall clock given (tests count the `fsync`s). */
export async function writeCheckpoint(
  path: string,
  checkpoint: CheckpointInput,
  fs: DurableFs,
  now: () => number,
): Promise<Checkpoint> {
  if (typeof path !== 'string' || path === '') {
    throw new ConfigError('path', 'must be a non-empty string (a file path)', path);
  }
  checkObject('checkpoint', checkpoint);
  const saved = checkCheckpoint('checkpoint', {
    ...checkpoint,
    version: checkpoint.version ?? CHECKPOINT_VERSION,
    savedAt: checkpoint.savedAt ?? new Date(now()).toISOString(),
  });
  const text = `${JSON.stringify({ ...saved, position: saved.position ?? null })}\n`;
  try {
    await writeFileAtomic(path, text, fs);
  } catch (error) {
    throw new CheckpointError(
      path,
      `checkpoint ${path} could not be saved (the previous one is intact): ${messageOf(error)}`,
      error,
    );
  }
  return saved;
}

/**
 * Checks that `value` is a checkpoint (`field` names it in the `ConfigError`s), and returns it as
 * a fresh plain object (`position: null` read as `undefined`).
 */
export function checkCheckpoint(field: string, value: unknown): Checkpoint {
  checkObject(field, value);
  checkKnownKeys(field, value, CHECKPOINT_KEYS);
  const c = value as Record<string, unknown>;
  if (c.version !== CHECKPOINT_VERSION) {
    throw new ConfigError(
      `${field}.version`,
      `must be ${CHECKPOINT_VERSION} (the checkpoint format this version of shardwise reads)`,
      c.version,
    );
  }
  const position =
    c.position === undefined || c.position === null
      ? undefined
      : checkPosition(`${field}.position`, c.position, true);
  if (typeof c.savedAt !== 'string' || Number.isNaN(Date.parse(c.savedAt))) {
    throw new ConfigError(`${field}.savedAt`, 'must be an ISO 8601 date string', c.savedAt);
  }
  const checkpoint: Checkpoint = {
    version: CHECKPOINT_VERSION,
    position,
    records: nonNegativeInt(`${field}.records`, c.records),
    written: nonNegativeInt(`${field}.written`, c.written),
    failed: nonNegativeInt(`${field}.failed`, c.failed),
    uncertain: nonNegativeInt(`${field}.uncertain`, c.uncertain),
    savedAt: c.savedAt,
  };
  if (c.files !== undefined) checkpoint.files = checkFileList(`${field}.files`, c.files);
  return checkpoint;
}

/**
 * Checks a source position (`file` required with `requireFile`; a bare `{ fileIndex, offset,
 * line }` is a position too) and returns a fresh copy.
 */
export function checkPosition(
  field: string,
  value: unknown,
  requireFile: boolean,
): SourcePosition & { file: string } {
  checkObject(field, value);
  checkKnownKeys(field, value, POSITION_KEYS);
  const p = value as Record<string, unknown>;
  if ((requireFile || p.file !== undefined) && (typeof p.file !== 'string' || p.file === '')) {
    throw new ConfigError(`${field}.file`, 'must be a non-empty string (a file path)', p.file);
  }
  return {
    file: (p.file as string | undefined) ?? '',
    fileIndex: nonNegativeInt(`${field}.fileIndex`, p.fileIndex),
    offset: nonNegativeInt(`${field}.offset`, p.offset),
    line: nonNegativeInt(`${field}.line`, p.line),
  };
}

function corrupt(path: string, why: string): CheckpointError {
  return new CheckpointError(
    path,
    `checkpoint ${path} is corrupt: ${why}; move it away to start the load over`,
  );
}
