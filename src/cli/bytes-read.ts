/**
 * How far a load has read its files, in bytes of the files as they lie on the disk — what its
 * percentage and its ETA are of. A plain file's source position is that count already. A `.gz`
 * file's position counts decompressed bytes, which its size on the disk does not tell; there the
 * compressed bytes read so far are the file descriptor's offset, which Linux shows in
 * `/proc/self/fdinfo` (the gunzip stream reads the file at its current offset); once the stream
 * has closed a file it was seen reading, it read it to the end. Where `/proc` is not to be had, a `.gz` file counts
 * as unread until it is done, and the count says it is not exact.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import type { SourcePosition } from '../sources/position.js';

/** One input file: its path (absolute, as the source was given it) and its size on the disk. */
export interface InputFile {
  path: string;
  bytes: number;
  gzip: boolean;
}

/** Bytes read of a list of files, from the source's position. */
export class BytesRead {
  /** The size of every file together. */
  readonly total: number;
  readonly #files: readonly InputFile[];
  /** The bytes of the files before each one. */
  readonly #before: number[];
  readonly #real: (string | undefined)[];
  /** The descriptor last found reading a `.gz` file, by file index. */
  #fd: { index: number; fd: string } | undefined;
  /** The `.gz` files whose descriptor was seen open. */
  readonly #opened = new Set<number>();
  readonly #proc: boolean;

  constructor(files: readonly InputFile[], proc = existsSync('/proc/self/fdinfo')) {
    this.#files = files;
    this.#before = [];
    let sum = 0;
    for (const f of files) {
      this.#before.push(sum);
      sum += f.bytes;
    }
    this.total = sum;
    this.#proc = proc;
    this.#real = files.map((f) => {
      try {
        return f.gzip ? realpathSync(f.path) : undefined;
      } catch {
        return undefined;
      }
    });
  }

  /**
   * Bytes read at `position` (the source's, after the record it gave last), and whether the count
   * is exact to the file being read (`false`: a `.gz` file whose read offset is not to be had).
   */
  at(position: SourcePosition): { bytes: number; exact: boolean } {
    const index = position.fileIndex;
    const file = this.#files[index];
    if (file === undefined) return { bytes: this.total, exact: true };
    const before = this.#before[index]!;
    if (!file.gzip) return { bytes: before + Math.min(position.offset, file.bytes), exact: true };
    if (!this.#proc || this.#real[index] === undefined) return { bytes: before, exact: false };
    let read = this.#gzipOffset(index);
    // Not open: not yet, or closed once read to its end.
    if (read === undefined) read = this.#opened.has(index) ? file.bytes : 0;
    else this.#opened.add(index);
    return { bytes: before + Math.min(read, file.bytes), exact: true };
  }

  /**
   * The bytes a load resumed at `position` has read before it starts: a plain file's offset, but
   * nothing of a `.gz` file (it is decompressed from its start again).
   */
  startingAt(position: SourcePosition): number {
    const file = this.#files[position.fileIndex];
    if (file === undefined) return this.total;
    const before = this.#before[position.fileIndex]!;
    return file.gzip ? before : before + Math.min(position.offset, file.bytes);
  }

  /** The read offset of the descriptor open on file `index`, from `/proc/self/fdinfo`. */
  #gzipOffset(index: number): number | undefined {
    const real = this.#real[index]!;
    try {
      if (this.#fd?.index !== index || readlinkSync(`/proc/self/fd/${this.#fd.fd}`) !== real) {
        this.#fd = undefined;
        for (const fd of readdirSync('/proc/self/fd')) {
          let link: string;
          try {
            link = readlinkSync(`/proc/self/fd/${fd}`);
          } catch {
            continue;
          }
          if (link === real) {
            this.#fd = { index, fd };
            break;
          }
        }
      }
      if (this.#fd === undefined) return undefined;
      const info = readFileSync(`/proc/self/fdinfo/${this.#fd.fd}`, 'utf8');
      const pos = /^pos:\s*(\d+)/m.exec(info);
      return pos === null ? undefined : Number(pos[1]);
    } catch {
      this.#fd = undefined;
      return undefined;
    }
  }
}
