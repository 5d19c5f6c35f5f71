/**
 * CheckpointWriter: saves to one file never overlap (two renames racing could leave the older
 * checkpoint), and while one runs only the newest waiting checkpoint is written next.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DurableFs } from '../../src/sources/file-system.js';
import { CheckpointError, CheckpointWriter, loadCheckpoint } from '../../src/sources/index.js';
import { flush } from '../helpers.js';
import { recordingFs, tempDir } from './files.js';

const root = tempDir('checkpoint-writer');
let dirs = 0;

/** A recording fs whose renames wait for `release()` (one rename per call). */
function gatedRenames(dir: string, failFirst = false) {
  const { fs, calls } = recordingFs(dir);
  const gates: (() => void)[] = [];
  let arrived: (() => void) | undefined;
  let renames = 0;
  const gated: DurableFs = {
    ...fs,
    rename: async (from, to) => {
      await new Promise<void>((resolve) => {
        gates.push(resolve);
        arrived?.();
      });
      if (failFirst && renames++ === 0) {
        throw Object.assign(new Error('EIO: i/o error, rename'), { code: 'EIO' });
      }
      return fs.rename(from, to);
    },
  };
  /** Resolves once a save has reached its rename (after real file I/O). */
  const reached = async () => {
    if (gates.length === 0) {
      await new Promise<void>((resolve) => {
        arrived = resolve;
      });
    }
    arrived = undefined;
  };
  /** Lets the next rename through, once a save has reached it. */
  const release = async () => {
    await reached();
    gates.shift()!();
  };
  return { fs: gated, calls, reached, release };
}

const at = (records: number) => ({
  position: { file: 'a.jsonl', fileIndex: 0, offset: records * 10, line: records },
  records,
  written: records,
  failed: 0,
  uncertain: 0,
});

describe('CheckpointWriter', () => {
  it('runs one save at a time; of the checkpoints waiting meanwhile, only the newest is written', async () => {
    const dir = join(root, `d${++dirs}`);
    mkdirSync(dir);
    const { fs, calls, reached, release } = gatedRenames(dir);
    const writer = new CheckpointWriter(join(dir, 'load.ckpt'), { fs, now: () => 0 });
    const first = writer.save(at(1));
    const second = writer.save(at(2));
    const third = writer.save(at(3));
    expect(third).toBe(second); // the waiting one was replaced by the newer
    await reached();
    await flush();
    // The first save is at its rename; no other has started.
    expect(calls.filter((c) => c.endsWith(' wx'))).toHaveLength(1);
    await release();
    expect((await first).records).toBe(1);
    await release();
    expect((await second).records).toBe(3);
    await writer.idle();
    expect(calls.filter((c) => c.endsWith(' wx'))).toHaveLength(2);
    expect((await loadCheckpoint(join(dir, 'load.ckpt')))?.records).toBe(3);
    expect(writer.last?.records).toBe(3);
  });

  it('a failed save rejects its callers with a CheckpointError; the next save is tried again', async () => {
    const dir = join(root, `d${++dirs}`);
    mkdirSync(dir);
    const { fs, release } = gatedRenames(dir, true);
    const path = join(dir, 'load.ckpt');
    const writer = new CheckpointWriter(path, { fs, now: () => 0 });
    const failing = writer.save(at(1));
    await release();
    await expect(failing).rejects.toBeInstanceOf(CheckpointError);
    const next = writer.save(at(2));
    await release();
    expect((await next).records).toBe(2);
    expect((await loadCheckpoint(path))?.records).toBe(2);
  });
});
