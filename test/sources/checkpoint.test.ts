/**
 * Checkpoint files: saved atomically (temporary file, fsync, rename, fsync of the directory), so a
 * reader — or a loader restarted after a crash — sees the previous checkpoint or the new one,
 * never a part; loaded back exactly; a corrupt one is a typed error naming the file.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { writeCheckpoint } from '../../src/sources/checkpoint.js';
import {
  type Checkpoint,
  CheckpointError,
  loadCheckpoint,
  readJsonl,
  SOURCE_POSITION,
  saveCheckpoint,
} from '../../src/sources/index.js';
import { fileWith, readAll, recordingFs, tempDir } from './files.js';

const root = tempDir('checkpoint');
let dirs = 0;
/** A directory of its own for each test (they look at what a directory holds). */
function freshDir(): string {
  const dir = join(root, `d${++dirs}`);
  mkdirSync(dir);
  return dir;
}

const AT = Date.parse('2025-03-04T05:06:07.089Z');
const position = { file: 'a.jsonl', fileIndex: 0, offset: 120, line: 7 };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('saveCheckpoint and loadCheckpoint', () => {
  it('round-trip a checkpoint; version and savedAt are filled in', async () => {
    const path = join(freshDir(), 'load.ckpt');
    const { fs } = recordingFs(root);
    const saved = await writeCheckpoint(
      path,
      { position, records: 7, written: 6, failed: 1, uncertain: 0, files: ['a.jsonl'] },
      fs,
      () => AT,
    );
    expect(saved).toEqual({
      version: 1,
      position,
      records: 7,
      written: 6,
      failed: 1,
      uncertain: 0,
      savedAt: '2025-03-04T05:06:07.089Z',
      files: ['a.jsonl'],
    });
    expect(await loadCheckpoint(path)).toEqual(saved);
    // Plain JSON on the disk, a line of its own.
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(saved);
  });

  it('a checkpoint with no position yet is saved as null and loaded as undefined', async () => {
    const path = join(freshDir(), 'load.ckpt');
    await saveCheckpoint(path, {
      position: undefined,
      records: 0,
      written: 0,
      failed: 0,
      uncertain: 0,
    });
    expect(JSON.parse(readFileSync(path, 'utf8')).position).toBeNull();
    const loaded = await loadCheckpoint(path);
    expect(loaded?.position).toBeUndefined();
    expect(loaded?.records).toBe(0);
  });

  it('no file: loadCheckpoint resolves undefined (a first run)', async () => {
    expect(await loadCheckpoint(join(freshDir(), 'none.ckpt'))).toBeUndefined();
  });

  it('a file that is not a checkpoint: a CheckpointError naming it, never undefined', async () => {
    const dir = freshDir();
    const good = JSON.stringify({
      version: 1,
      position,
      records: 1,
      written: 1,
      failed: 0,
      uncertain: 0,
      savedAt: '2025-01-01T00:00:00.000Z',
    });
    const cases: [string, string][] = [
      ['cut', good.slice(0, 40)],
      ['empty', ''],
      ['version', good.replace('"version":1', '"version":2')],
      ['negative', good.replace('"records":1', '"records":-1')],
      ['date', good.replace('2025-01-01T00:00:00.000Z', 'yesterday')],
      ['array', '[1,2]'],
    ];
    for (const [name, text] of cases) {
      const path = join(dir, `${name}.ckpt`);
      writeFileSync(path, text);
      const error = await rejection(loadCheckpoint(path));
      expect(error, name).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).path).toBe(path);
      expect((error as Error).message).toContain(path);
      expect((error as Error).message).toContain('is corrupt');
    }
  });

  it('a checkpoint that is not one is refused before anything is written: a ConfigError naming the field', async () => {
    const dir = freshDir();
    const base = { position, records: 1, written: 1, failed: 0, uncertain: 0 };
    const cases: [unknown, string][] = [
      [{ ...base, records: -1 }, 'checkpoint.records'],
      [{ ...base, writen: 1 }, 'checkpoint.writen'],
      [{ ...base, position: { ...position, offset: 'x' } }, 'checkpoint.position.offset'],
      [{ ...base, files: ['a', 3] }, 'checkpoint.files[1]'],
    ];
    for (const [checkpoint, field] of cases) {
      const error = await rejection(saveCheckpoint(join(dir, 'x.ckpt'), checkpoint as never));
      expect(error, field).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('saveCheckpoint is atomic and durable', () => {
  it('writes a temporary file beside the target, fsyncs it, renames it over, fsyncs the directory', async () => {
    const dir = freshDir();
    const path = join(dir, 'load.ckpt');
    const { fs, calls } = recordingFs(dir);
    await writeCheckpoint(
      path,
      { position, records: 7, written: 7, failed: 0, uncertain: 0 },
      fs,
      () => AT,
    );
    expect(calls).toHaveLength(8);
    const temp = calls[0]!.split(' ')[1]!;
    expect(temp).toMatch(/^\.load\.ckpt\.\d+\.\d+\.tmp$/); // same directory, hidden
    expect(calls).toEqual([
      `open ${temp} wx`,
      `write ${temp}`,
      `sync ${temp}`,
      `close ${temp}`,
      `rename ${temp} load.ckpt`,
      'open . r',
      'sync .',
      'close .',
    ]);
    expect(readdirSync(dir)).toEqual(['load.ckpt']);
  });

  for (const failing of ['write', 'sync', 'rename'] as const) {
    it(`a failing ${failing}: a CheckpointError naming the file, the previous checkpoint intact, no temporary left`, async () => {
      const dir = freshDir();
      const path = join(dir, 'load.ckpt');
      const before = await saveCheckpoint(path, {
        position,
        records: 7,
        written: 7,
        failed: 0,
        uncertain: 0,
      });
      const { fs, calls } = recordingFs(dir, (call) => call.startsWith(`${failing} .load`));
      const error = await rejection(
        writeCheckpoint(
          path,
          {
            position: { ...position, offset: 999 },
            records: 9,
            written: 9,
            failed: 0,
            uncertain: 0,
          },
          fs,
          () => AT,
        ),
      );
      expect(error).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).path).toBe(path);
      expect((error as Error).message).toContain('the previous one is intact');
      expect(calls.some((c) => c.startsWith('unlink .load'))).toBe(true);
      expect(await loadCheckpoint(path)).toEqual(before);
      expect(readdirSync(dir)).toEqual(['load.ckpt']);
    });
  }

  it('a path that cannot be written (its parent is a regular file): a CheckpointError', async () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'plain'), 'x');
    const path = join(dir, 'plain', 'load.ckpt');
    const error = await rejection(
      saveCheckpoint(path, { position, records: 1, written: 1, failed: 0, uncertain: 0 }),
    );
    expect(error).toBeInstanceOf(CheckpointError);
    expect((error as Error).message).toContain(path);
  });

  it('a reader loading while checkpoints are saved always finds a whole one', async () => {
    const dir = freshDir();
    const path = join(dir, 'load.ckpt');
    await saveCheckpoint(path, { position, records: 0, written: 0, failed: 0, uncertain: 0 });
    let saving = true;
    const seen = new Set<number>();
    const reader = (async () => {
      while (saving) {
        const loaded = await loadCheckpoint(path); // a part of a file would throw here
        seen.add(loaded!.records);
      }
    })();
    for (let i = 1; i <= 150; i++) {
      await saveCheckpoint(path, {
        position: { ...position, offset: i * 100 },
        records: i,
        written: i,
        failed: 0,
        uncertain: 0,
        files: Array.from({ length: 50 }, (_, f) => `part-${f}.jsonl.gz`),
      });
    }
    saving = false;
    await reader;
    expect(seen.size).toBeGreaterThan(0);
    expect((await loadCheckpoint(path))?.records).toBe(150);
    expect(readdirSync(dir)).toEqual(['load.ckpt']);
  });
});

describe('a checkpoint resumes a source', () => {
  it('readJsonl(files, { from: await loadCheckpoint(path) }) gives exactly the records after it', async () => {
    const dir = freshDir();
    const a = fileWith(dir, 'a.jsonl', '{"n":1}\n{"n":2}\n');
    const b = fileWith(dir, 'b.jsonl.gz', '{"n":3}\n{"n":4}\n');
    const first = readJsonl([a, b], { parse: true });
    const iterator = first[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next();
    await iterator.next(); // {"n":3}: the first record of b
    await iterator.return?.();
    const path = join(dir, 'load.ckpt');
    const saved: Checkpoint = await saveCheckpoint(path, {
      position: iterator[SOURCE_POSITION](),
      records: 3,
      written: 3,
      failed: 0,
      uncertain: 0,
      files: [a, b],
    });
    expect(saved.position).toEqual({ file: b, fileIndex: 1, offset: 8, line: 1 });
    const rest = await readAll(
      readJsonl([a, b], { parse: true, from: await loadCheckpoint(path) }),
    );
    expect(rest.map((r) => r.value)).toEqual([{ n: 4 }]);
  });
});
