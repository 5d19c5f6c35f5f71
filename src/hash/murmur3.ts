import type { Key } from '../base/types.js';
import { encodeUtf8, utf8Scratch } from './utf8.js';

/**
 * MurmurHash3 x86_32 (Austin Appleby, SMHasher, public domain): 32-bit, seeded, ~1 cycle/byte and
 * good avalanche, which is all a ring point or a table slot needs (md5, as in npm `hashring`, costs
 * microseconds per key for no routing benefit). Strings are hashed as their UTF-8 bytes, so a
 * string and its `TextEncoder` bytes hash alike.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/**
 * The 32-bit MurmurHash3 (x86_32) of `key`'s bytes (UTF-8 for strings), as an unsigned integer.
 *
 * @example
 * murmur3_32('hello', 0); // → 613153351
 */
export function murmur3_32(key: Key, seed = 0): number {
  return typeof key === 'string' ? hashString(key, seed) : murmur3_32Bytes(key, key.length, seed);
}

/** MurmurHash3 x86_32 over the first `length` bytes of `bytes`. */
export function murmur3_32Bytes(bytes: Uint8Array, length: number, seed = 0): number {
  let h = seed | 0;
  const end = length & ~3;
  let i = 0;
  for (; i < end; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, C2);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rest = length & 3;
  if (rest !== 0) {
    let k = bytes[i]!;
    if (rest > 1) k |= bytes[i + 1]! << 8;
    if (rest > 2) k |= bytes[i + 2]! << 16;
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, C2);
  }
  return fmix32(h ^ length);
}

// ASCII reads the string's code units directly (no copy); the first non-ASCII unit restarts the
// hash over the real UTF-8 bytes, so the result never depends on which path ran.
function hashString(s: string, seed: number): number {
  const length = s.length;
  let h = seed | 0;
  const end = length & ~3;
  let i = 0;
  for (; i < end; i += 4) {
    const c0 = s.charCodeAt(i);
    const c1 = s.charCodeAt(i + 1);
    const c2 = s.charCodeAt(i + 2);
    const c3 = s.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) > 0x7f) return hashUtf8(s, seed);
    let k = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, C2);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rest = length & 3;
  if (rest !== 0) {
    const c0 = s.charCodeAt(i);
    const c1 = rest > 1 ? s.charCodeAt(i + 1) : 0;
    const c2 = rest > 2 ? s.charCodeAt(i + 2) : 0;
    if ((c0 | c1 | c2) > 0x7f) return hashUtf8(s, seed);
    let k = c0 | (c1 << 8) | (c2 << 16);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, C2);
  }
  return fmix32(h ^ length);
}

function hashUtf8(s: string, seed: number): number {
  const length = encodeUtf8(s);
  return murmur3_32Bytes(utf8Scratch(), length, seed);
}

/**
 * MurmurHash3's 32-bit finalizer: a bijection with full avalanche, used to mix two hashes into a
 * third (rendezvous scores) without hashing bytes again.
 */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
