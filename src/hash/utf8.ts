/**
 * UTF-8 bytes of a string key without a per-call allocation: ASCII is copied by `charCodeAt`,
 * anything else goes through `Buffer#write`, which (unlike `TextEncoder.encodeInto`) returns a
 * plain number rather than a fresh `{ read, written }` object. The bytes live in one shared
 * scratch buffer and are valid until the next call.
 */

let scratch: Buffer = Buffer.allocUnsafeSlow(1024);

/** Encodes `text` into the scratch buffer; returns the byte count. Read it with {@link utf8Scratch}. */
export function encodeUtf8(text: string): number {
  const n = text.length;
  // 3 bytes per UTF-16 unit is the worst case (a surrogate pair is 2 units for 4 bytes).
  if (n * 3 > scratch.length) scratch = Buffer.allocUnsafeSlow(Math.max(n * 3, scratch.length * 2));
  const out = scratch;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return out.write(text, 0, 'utf8');
    out[i] = c;
  }
  return n;
}

/** The scratch buffer the last {@link encodeUtf8} wrote to (it may be replaced by a later call). */
export function utf8Scratch(): Uint8Array {
  return scratch;
}
