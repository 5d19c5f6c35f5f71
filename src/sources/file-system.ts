/**
 * The few file operations durable writes need (checkpoints, dead letters), as an interface: Node's
 * `fs/promises` by default, and a recording stand-in in tests that count `fsync` calls or make one
 * fail on purpose.
 */
import { open, rename, unlink } from 'node:fs/promises';

/** An open file: Node's `FileHandle` has these. */
export interface DurableFile {
  /** Writes all of `data` (at the end, for a file opened to append). */
  writeFile(data: string | Uint8Array): Promise<void>;
  /** `fsync`: resolves once the file's data is on the disk. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The file system durable writes use. */
export interface DurableFs {
  /** `flags` as Node's `fs.open`: `'a'` to append, `'wx'` to create a new file, `'r'` to read. */
  open(path: string, flags: string): Promise<DurableFile>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

/** Node's own file system. */
export const nodeFs: DurableFs = { open, rename, unlink };
