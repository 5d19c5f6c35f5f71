/**
 * Issue #14's promise for the new entry points: each validates its input's shape first. A bad
 * shape ends in a ConfigError naming the field — thrown, or rejected for those returning a
 * promise — never a raw TypeError from deep inside, never a silent default.
 */
import { describe, it } from 'vitest';
import {
  CheckpointWriter,
  DeadLetterFile,
  loadCheckpoint,
  readDeadLetters,
  readJsonl,
  saveCheckpoint,
} from '../../src/sources/index.js';
import { expectConfigError, notABag, notAList } from '../input/shapes.js';

const PATH = 'never-opened.jsonl';

describe('shardwise/sources entry points', () => {
  it.each(notABag().filter(([name]) => name !== 'undefined'))('options: %s', async (_name, bad) => {
    await expectConfigError('readJsonl', () => readJsonl(PATH, bad as never), /^options$/);
    await expectConfigError(
      'readDeadLetters',
      () => readDeadLetters(PATH, bad as never),
      /^options$/,
    );
    await expectConfigError(
      'DeadLetterFile.open',
      () => DeadLetterFile.open(PATH, bad as never),
      /^options$/,
    );
    await expectConfigError(
      'CheckpointWriter',
      () => new CheckpointWriter(PATH, bad as never),
      /^options$/,
    );
    await expectConfigError(
      'saveCheckpoint',
      () => saveCheckpoint(PATH, bad as never),
      /^checkpoint$/,
    );
    await expectConfigError(
      'readJsonl from',
      () => readJsonl(PATH, { from: bad as never }),
      /^from$/,
    );
  });

  it.each(notAList(PATH).filter(([name]) => name !== 'a string'))(
    'paths: %s',
    async (_name, bad) => {
      await expectConfigError('readJsonl', () => readJsonl(bad as never), /^paths/);
      await expectConfigError('readDeadLetters', () => readDeadLetters(bad as never), /^paths/);
    },
  );

  it.each([
    ['null', null],
    ['a number', 7],
    ['an empty string', ''],
    ['an array', [PATH]],
  ])('a single path: %s', async (_name, bad) => {
    await expectConfigError('loadCheckpoint', () => loadCheckpoint(bad as never), /^path$/);
    await expectConfigError(
      'saveCheckpoint',
      () => saveCheckpoint(bad as never, {} as never),
      /^path$/,
    );
    await expectConfigError(
      'DeadLetterFile.open',
      () => DeadLetterFile.open(bad as never),
      /^path$/,
    );
    await expectConfigError('CheckpointWriter', () => new CheckpointWriter(bad as never), /^path$/);
  });

  it('injected pieces of the wrong kind', async () => {
    await expectConfigError('now', () => DeadLetterFile.open(PATH, { now: 5 as never }), /^now$/);
    await expectConfigError(
      'clock',
      () => DeadLetterFile.open(PATH, { clock: 'x' as never }),
      /^clock$/,
    );
    await expectConfigError('fs', () => new CheckpointWriter(PATH, { fs: null as never }), /^fs$/);
  });
});
