/**
 * Where a resumed source starts: the `from` option (a position, or a checkpoint holding one)
 * checked against the files it is given, so a checkpoint of another load, or of a list of files
 * that changed, is refused instead of resuming at a wrong place.
 */
import { resolve } from 'node:path';
import { ConfigError } from '../base/errors.js';
import { checkCheckpoint, checkPosition } from './checkpoint.js';

/** The place a source starts reading, and the field that named it (for later errors). */
export interface StartAt {
  fileIndex: number;
  offset: number;
  /** The line number of the last line before `offset` (0 at the start of a file). */
  line: number;
  /** The option path of the position: `from`, or `from.position` for a checkpoint. */
  field: string;
}

/**
 * Resolves `from` against `paths`. A checkpoint (an object with `version`) gives its `position`
 * (none: the start) and its `files`, which must match `paths` up to the position's file; a
 * position gives itself, its `file` (if any) matching `paths[fileIndex]`.
 */
export function resolveFrom(from: unknown, paths: readonly string[]): StartAt {
  if (from === undefined) return { fileIndex: 0, offset: 0, line: 0, field: 'from' };
  const isCheckpoint = typeof from === 'object' && from !== null && 'version' in from;
  const field = isCheckpoint ? 'from.position' : 'from';
  let position: ReturnType<typeof checkPosition> | undefined;
  let files: string[] | undefined;
  if (isCheckpoint) {
    const checkpoint = checkCheckpoint('from', from);
    if (checkpoint.position === undefined) return { fileIndex: 0, offset: 0, line: 0, field };
    position = checkpoint.position as ReturnType<typeof checkPosition>;
    files = checkpoint.files;
  } else {
    position = checkPosition('from', from, false);
  }
  const { fileIndex } = position;
  if (fileIndex >= paths.length) {
    throw new ConfigError(
      `${field}.fileIndex`,
      `must be below the number of files read (${paths.length}): the position is of another list of files`,
      fileIndex,
    );
  }
  if (files !== undefined) {
    for (let i = 0; i <= fileIndex; i++) {
      if (files[i] === undefined || !sameFile(files[i]!, paths[i]!)) {
        throw new ConfigError(
          'from.files',
          `must match the files read up to the checkpoint's file: file ${i} was ${JSON.stringify(files[i] ?? null)} and is now ${JSON.stringify(paths[i])}`,
          undefined,
          { given: false },
        );
      }
    }
  }
  if (position.file !== '' && !sameFile(position.file, paths[fileIndex]!)) {
    throw new ConfigError(
      `${field}.file`,
      `must name the file at index ${fileIndex} of the files read (${JSON.stringify(paths[fileIndex])}): the list of files changed since the position was taken`,
      position.file,
    );
  }
  return { fileIndex, offset: position.offset, line: position.line, field };
}

/** Two names of one file: equal as given, or once made absolute. */
function sameFile(a: string, b: string): boolean {
  return a === b || resolve(a) === resolve(b);
}
