/**
 * A growable byte buffer that batch bodies are written into as records arrive: no string per
 * record, no join, no second copy — the body is the buffer. Short text is copied in a JavaScript
 * loop when it is ASCII (a call into C++ per record costs more than the copy); longer or
 * non-ASCII text goes through `Buffer#write` as UTF-8.
 */

/** Text up to this many UTF-16 units is copied byte by byte when it is ASCII. */
const ASCII_LOOP_MAX = 128;

export class ByteBuffer {
  buf: Buffer;
  /** Bytes written so far (the next write goes here). */
  length = 0;

  constructor(capacity = 1024) {
    this.buf = Buffer.allocUnsafe(Math.max(16, capacity));
  }

  /** Makes room for `extra` more bytes; returns the (possibly new) underlying buffer. */
  reserve(extra: number): Buffer {
    const need = this.length + extra;
    if (need <= this.buf.length) return this.buf;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
    return next;
  }

  writeByte(byte: number): void {
    const buf = this.reserve(1);
    buf[this.length++] = byte;
  }

  /** Writes `text` as UTF-8, as it is (no escaping). */
  writeText(text: string): void {
    const n = text.length;
    if (n <= ASCII_LOOP_MAX) {
      const buf = this.reserve(n);
      const at = this.length;
      let i = 0;
      for (; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c > 127) break;
        buf[at + i] = c;
      }
      if (i === n) {
        this.length = at + n;
        return;
      }
    }
    // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4).
    const buf = this.reserve(3 * n);
    this.length += buf.write(text, this.length, 'utf8');
  }

  writeBytes(bytes: Uint8Array): void {
    const buf = this.reserve(bytes.byteLength);
    buf.set(bytes, this.length);
    this.length += bytes.byteLength;
  }

  /** The bytes written, without copying (valid until the next write that grows the buffer). */
  view(start = 0, end = this.length): Buffer {
    return this.buf.subarray(start, end);
  }
}

/**
 * Writes the decimal digits of a safe integer (|v| < 2⁵³) at `at`; returns the offset after them.
 * Integer arithmetic in two halves of at most 8 digits, so no string is made.
 */
export function writeSafeInteger(buf: Buffer, at: number, v: number): number {
  if (v < 0) {
    buf[at++] = 45; // '-'
    v = -v;
  }
  if (v < 100_000_000) return writeUint(buf, at, v);
  const high = Math.floor(v / 100_000_000);
  let low = v - high * 100_000_000;
  at = writeUint(buf, at, high);
  for (let i = at + 7; i >= at; i--) {
    const q = (low / 10) | 0;
    buf[i] = 48 + low - q * 10;
    low = q;
  }
  return at + 8;
}

/** Digits of an integer in [0, 2³¹). */
function writeUint(buf: Buffer, at: number, v: number): number {
  let digits = 1;
  for (let t = v; t >= 10; t = (t / 10) | 0) digits++;
  let i = at + digits;
  const end = i;
  do {
    const q = (v / 10) | 0;
    buf[--i] = 48 + v - q * 10;
    v = q;
  } while (v > 0);
  return end;
}
