/**
 * Bytes of one file, read in large chunks from a byte offset: straight from the file, or through
 * streaming gunzip for `.gz` (a gzip file has no index, so an offset in it is reached by
 * decompressing and skipping that many bytes).
 */
import { type FileHandle, open } from 'node:fs/promises';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';

/** A file's bytes from some offset on, read into a caller's buffer. */
export interface ChunkReader {
  /** Reads up to `length` bytes into `buffer` at `at`; resolves 0 at the end of the file. */
  read(buffer: Buffer, at: number, length: number): Promise<number>;
  /** Releases the file; safe to call twice, or while a read is pending. */
  close(): Promise<void>;
}

/** How much compressed input is read at once, and the decompressed chunk gunzip gives. */
const GZIP_READ_BYTES = 1 << 20;
const GZIP_CHUNK_BYTES = 256 * 1024;

/** True for a name that says gzip: `*.gz` (`.jsonl.gz`, `.ndjson.gz`). */
export function isGzipName(path: string): boolean {
  return /\.gz$/i.test(path);
}

/**
 * Opens `path` and positions it at byte `from` (of the decompressed bytes for `gzip`). Rejects
 * with the system error when the file cannot be opened; a `from` past the end is not an error
 * here: the first read gives 0.
 */
export async function openChunks(path: string, from: number, gzip: boolean): Promise<ChunkReader> {
  const handle = await open(path, 'r');
  return gzip ? new GzipChunks(handle, from) : new FileChunks(handle, from);
}

class FileChunks implements ChunkReader {
  private closed: Promise<void> | undefined;
  constructor(
    private readonly handle: FileHandle,
    private position: number,
  ) {}

  async read(buffer: Buffer, at: number, length: number): Promise<number> {
    const { bytesRead } = await this.handle.read(buffer, at, length, this.position);
    this.position += bytesRead;
    return bytesRead;
  }

  close(): Promise<void> {
    this.closed ??= this.handle.close();
    return this.closed;
  }
}

class GzipChunks implements ChunkReader {
  private readonly chunks: AsyncIterator<Buffer>;
  private readonly stop: () => Promise<unknown>;
  /** What is left of the last decompressed chunk. */
  private pending: Buffer | undefined;
  /** Decompressed bytes still to skip to reach the starting offset. */
  private skip: number;

  constructor(handle: FileHandle, from: number) {
    this.skip = from;
    const gunzip = createGunzip({ chunkSize: GZIP_CHUNK_BYTES });
    const input = handle.createReadStream({ highWaterMark: GZIP_READ_BYTES });
    // pipeline carries a read error into gunzip (so the iterator below rejects with it) and
    // closes the file however the stream ends.
    pipeline(input, gunzip, () => {});
    this.chunks = gunzip[Symbol.asyncIterator]();
    this.stop = () => {
      input.destroy();
      gunzip.destroy();
      // The file is released when the stream closes (after a read in flight), not at destroy().
      return input.closed
        ? Promise.resolve()
        : new Promise<void>((resolve) => input.once('close', () => resolve()));
    };
  }

  async read(buffer: Buffer, at: number, length: number): Promise<number> {
    for (;;) {
      let chunk = this.pending;
      if (chunk === undefined) {
        const next = await this.chunks.next();
        if (next.done === true) return 0;
        chunk = next.value;
      }
      if (this.skip > 0) {
        const skipped = Math.min(this.skip, chunk.length);
        this.skip -= skipped;
        chunk = chunk.subarray(skipped);
      }
      if (chunk.length === 0) {
        this.pending = undefined;
        continue;
      }
      const n = Math.min(length, chunk.length);
      chunk.copy(buffer, at, 0, n);
      this.pending = n < chunk.length ? chunk.subarray(n) : undefined;
      return n;
    }
  }

  async close(): Promise<void> {
    this.pending = undefined;
    await this.stop();
  }
}
