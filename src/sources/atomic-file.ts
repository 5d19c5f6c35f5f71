/**
 * Replacing a file so that a crash at any moment leaves either the old content or the new one,
 * never a mix or nothing: write a temporary file beside it, `fsync` it, rename it over the target
 * (atomic within one directory on POSIX), then `fsync` the directory so the rename itself is on
 * the disk (the sequence SQLite, LevelDB and Prometheus's WAL use).
 */
import { basename, dirname, join } from 'node:path';
import type { DurableFile, DurableFs } from './file-system.js';

/** Makes temporary names unique within the process; the pid makes them unique across processes. */
let sequence = 0;

/**
 * Writes `data` to `path` atomically and durably (see the module comment). On failure the target
 * is untouched, the temporary file removed, and the system error rethrown.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  fs: DurableFs,
): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${++sequence}.tmp`);
  let file: DurableFile | undefined;
  try {
    file = await fs.open(temp, 'wx');
    await file.writeFile(data);
    await file.sync();
    const closing = file;
    file = undefined;
    await closing.close();
    await fs.rename(temp, path);
  } catch (error) {
    await file?.close().catch(() => {});
    await fs.unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dir, fs);
}

/**
 * `fsync` on a directory makes its entries (a rename, a new file) durable. Some systems refuse it on a
 * directory (Windows: `EISDIR`/`EPERM`; some file systems: `EINVAL`): there the rename is as
 * durable as the system makes it, and that is not an error.
 */
export async function syncDirectory(dir: string, fs: DurableFs): Promise<void> {
  let handle: DurableFile;
  try {
    handle = await fs.open(dir, 'r');
  } catch (error) {
    if (unsupported(error)) return;
    throw error;
  }
  try {
    await handle.sync();
  } catch (error) {
    if (!unsupported(error)) throw error;
  } finally {
    await handle.close().catch(() => {});
  }
}

function unsupported(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'EISDIR' || code === 'EPERM' || code === 'EINVAL' || code === 'ENOTSUP';
}
