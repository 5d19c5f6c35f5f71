/**
 * Temporary files for the source and dead-letter tests: a directory per test file, removed after
 * it, and the few file helpers the tests share.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll } from 'vitest';
import { type DurableFs, nodeFs } from '../../src/sources/file-system.js';
import { SOURCE_POSITION, type SourcePosition } from '../../src/sources/index.js';

/** A fresh directory removed when the test file ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `shardwise-${prefix}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let count = 0;

/** Writes `content` to a new file in `dir` (gzipped for a name ending in `.gz`); its path. */
export function fileWith(dir: string, name: string, content: string | Buffer): string {
  const path = join(dir, `${++count}-${name}`);
  writeFileSync(path, name.endsWith('.gz') ? gzipSync(content) : content);
  return path;
}

/** Every record of a positioned source with the position reported after it. */
export async function readAll<T>(
  source: AsyncIterable<T> & { [SOURCE_POSITION](): SourcePosition },
): Promise<{ value: T; at: SourcePosition }[]> {
  const out: { value: T; at: SourcePosition }[] = [];
  const iterator = source[Symbol.asyncIterator]() as AsyncIterator<T> & {
    [SOURCE_POSITION](): SourcePosition;
  };
  for (;;) {
    const next = await iterator.next();
    if (next.done === true) return out;
    out.push({ value: next.value, at: iterator[SOURCE_POSITION]() });
  }
}

/** How many file descriptors this process holds (Linux), to see that a source closed its file. */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** One operation a {@link recordingFs} saw: `open x.tmp wx`, `sync x.tmp`, `rename a b` … */
export type FsCall = string;

/**
 * Node's file system with every call recorded (file names relative to `dir`: `.` is `dir`
 * itself), and a chosen call failing with an `EIO` error: the way to count `fsync`s and to break
 * one on purpose without timings or a broken disk.
 */
export function recordingFs(
  dir: string,
  failOn?: (call: FsCall) => boolean,
): { fs: DurableFs; calls: FsCall[] } {
  const calls: FsCall[] = [];
  const rel = (p: string) => relative(dir, p) || '.';
  const step = async <T>(call: FsCall, run: () => Promise<T>): Promise<T> => {
    calls.push(call);
    if (failOn?.(call) === true) {
      throw Object.assign(new Error(`EIO: i/o error, ${call}`), { code: 'EIO' });
    }
    return run();
  };
  const fs: DurableFs = {
    async open(path, flags) {
      const file = await step(`open ${rel(path)} ${flags}`, () => nodeFs.open(path, flags));
      const name = rel(path);
      return {
        writeFile: (data) => step(`write ${name}`, () => file.writeFile(data)),
        sync: () => step(`sync ${name}`, () => file.sync()),
        close: () => step(`close ${name}`, () => file.close()),
      };
    },
    rename: (from, to) => step(`rename ${rel(from)} ${rel(to)}`, () => nodeFs.rename(from, to)),
    unlink: (path) => step(`unlink ${rel(path)}`, () => nodeFs.unlink(path)),
  };
  return { fs, calls };
}
