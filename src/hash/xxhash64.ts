import type { Key } from '../base/types.js';
import { encodeUtf8, utf8Scratch } from './utf8.js';

/**
 * XXH64 (Yann Collet, xxHash, BSD-2): the 64-bit member of the xxHash family, for jump hashing,
 * whose LCG walk wants a full 64-bit key. JavaScript has no 64-bit integer but `bigint`, which
 * allocates, so the arithmetic runs on (high, low) uint32 pairs; helpers leave their result in
 * the module register `R` ([high, low]) instead of returning an object.
 */

const P1H = 0x9e3779b1;
const P1L = 0x85ebca87;
const P2H = 0xc2b2ae3d;
const P2L = 0x27d4eb4f;
const P3H = 0x165667b1;
const P3L = 0x9e3779f9;
const P4H = 0x85ebca77;
const P4L = 0xc2b2ae63;
const P5H = 0x27d4eb2f;
const P5L = 0x165667c5;
// 2^64 − P1, so that `seed − P1` is an addition.
const NEG_P1H = 0x61c8864e;
const NEG_P1L = 0x7a143579;

// The result register: a typed array, because a module-level \`let\` holding a uint32 above 2^30
// is boxed as a heap number on every write, which made the hash 5× slower.
const R = new Uint32Array(2);

/** High 32 bits of the 64-bit product of two uint32 (16-bit limbs keep every step exact). */
export function umulh32(a: number, b: number): number {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const mid = ((a0 * b0) >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  return (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) >>> 0;
}

function mul(ah: number, al: number, bh: number, bl: number): void {
  const hi = umulh32(al, bl) + Math.imul(ah, bl) + Math.imul(al, bh);
  R[1] = Math.imul(al, bl) >>> 0;
  R[0] = hi >>> 0;
}

function add(ah: number, al: number, bh: number, bl: number): void {
  const lo = (al + bl) >>> 0;
  R[0] = (ah + bh + (lo < al ? 1 : 0)) >>> 0;
  R[1] = lo;
}

/** Rotate left by 0 < r < 32. */
function rotl(h: number, l: number, r: number): void {
  R[0] = ((h << r) | (l >>> (32 - r))) >>> 0;
  R[1] = ((l << r) | (h >>> (32 - r))) >>> 0;
}

/** XXH64_round: acc = rotl(acc + input × P2, 31) × P1. */
function round(ah: number, al: number, ih: number, il: number): void {
  mul(ih, il, P2H, P2L);
  add(ah, al, R[0]!, R[1]!);
  rotl(R[0]!, R[1]!, 31);
  mul(R[0]!, R[1]!, P1H, P1L);
}

function read32(b: Uint8Array, p: number): number {
  return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
}

/** XXH64 of `b[0 .. length)`, seeded with (sh, sl); leaves the digest in (R[0]!, R[1]!). */
function digest(b: Uint8Array, length: number, sh: number, sl: number): void {
  let p = 0;
  let hh: number;
  let hl: number;
  if (length >= 32) {
    add(sh, sl, P1H, P1L);
    add(R[0]!, R[1]!, P2H, P2L);
    let v1h = R[0]!;
    let v1l = R[1]!;
    add(sh, sl, P2H, P2L);
    let v2h = R[0]!;
    let v2l = R[1]!;
    let v3h = sh;
    let v3l = sl;
    add(sh, sl, NEG_P1H, NEG_P1L);
    let v4h = R[0]!;
    let v4l = R[1]!;
    const limit = length - 32;
    do {
      round(v1h, v1l, read32(b, p + 4), read32(b, p));
      v1h = R[0]!;
      v1l = R[1]!;
      round(v2h, v2l, read32(b, p + 12), read32(b, p + 8));
      v2h = R[0]!;
      v2l = R[1]!;
      round(v3h, v3l, read32(b, p + 20), read32(b, p + 16));
      v3h = R[0]!;
      v3l = R[1]!;
      round(v4h, v4l, read32(b, p + 28), read32(b, p + 24));
      v4h = R[0]!;
      v4l = R[1]!;
      p += 32;
    } while (p <= limit);
    rotl(v1h, v1l, 1);
    hh = R[0]!;
    hl = R[1]!;
    rotl(v2h, v2l, 7);
    add(hh, hl, R[0]!, R[1]!);
    hh = R[0]!;
    hl = R[1]!;
    rotl(v3h, v3l, 12);
    add(hh, hl, R[0]!, R[1]!);
    hh = R[0]!;
    hl = R[1]!;
    rotl(v4h, v4l, 18);
    add(hh, hl, R[0]!, R[1]!);
    hh = R[0]!;
    hl = R[1]!;
    for (let lane = 0; lane < 4; lane++) {
      const vh = lane === 0 ? v1h : lane === 1 ? v2h : lane === 2 ? v3h : v4h;
      const vl = lane === 0 ? v1l : lane === 1 ? v2l : lane === 2 ? v3l : v4l;
      // XXH64_mergeRound: acc = (acc ^ round(0, v)) × P1 + P4
      round(0, 0, vh, vl);
      mul((hh ^ R[0]!) >>> 0, (hl ^ R[1]!) >>> 0, P1H, P1L);
      add(R[0]!, R[1]!, P4H, P4L);
      hh = R[0]!;
      hl = R[1]!;
    }
  } else {
    add(sh, sl, P5H, P5L);
    hh = R[0]!;
    hl = R[1]!;
  }
  add(hh, hl, Math.floor(length / 4294967296), length >>> 0);
  hh = R[0]!;
  hl = R[1]!;
  for (; p + 8 <= length; p += 8) {
    round(0, 0, read32(b, p + 4), read32(b, p));
    rotl((hh ^ R[0]!) >>> 0, (hl ^ R[1]!) >>> 0, 27);
    mul(R[0]!, R[1]!, P1H, P1L);
    add(R[0]!, R[1]!, P4H, P4L);
    hh = R[0]!;
    hl = R[1]!;
  }
  if (p + 4 <= length) {
    mul(0, read32(b, p), P1H, P1L);
    rotl((hh ^ R[0]!) >>> 0, (hl ^ R[1]!) >>> 0, 23);
    mul(R[0]!, R[1]!, P2H, P2L);
    add(R[0]!, R[1]!, P3H, P3L);
    hh = R[0]!;
    hl = R[1]!;
    p += 4;
  }
  for (; p < length; p++) {
    mul(0, b[p]!, P5H, P5L);
    rotl((hh ^ R[0]!) >>> 0, (hl ^ R[1]!) >>> 0, 11);
    mul(R[0]!, R[1]!, P1H, P1L);
    hh = R[0]!;
    hl = R[1]!;
  }
  // Avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32.
  mul(hh, (hl ^ (hh >>> 1)) >>> 0, P2H, P2L);
  mul((R[0]! ^ (R[0]! >>> 29)) >>> 0, (R[1]! ^ ((R[1]! >>> 29) | (R[0]! << 3))) >>> 0, P3H, P3L);
  R[1] = (R[1]! ^ R[0]!) >>> 0;
}

function digestKey(key: Key, sh: number, sl: number): void {
  if (typeof key === 'string') {
    const length = encodeUtf8(key);
    digest(utf8Scratch(), length, sh, sl);
  } else {
    digest(key, key.length, sh, sl);
  }
}

/**
 * XXH64 of `key`'s bytes (UTF-8 for strings) into `out` as `[high, low]` uint32 halves, with no
 * allocation: the form the hot path uses.
 *
 * @example
 * const out = new Uint32Array(2);
 * xxhash64Into('abc', 0, out); // out → [0x44bc2cf5, 0xad770999]
 */
export function xxhash64Into(key: Key, seed: number, out: Uint32Array): Uint32Array {
  digestKey(key, Math.floor(seed / 4294967296) >>> 0, seed >>> 0);
  out[0] = R[0]!;
  out[1] = R[1]!;
  return out;
}

/**
 * XXH64 of `key`'s bytes (UTF-8 for strings) as a `bigint`. `seed` is an unsigned 64-bit value
 * (a safe integer or a bigint).
 *
 * @example
 * xxhash64('abc'); // → 0x44bc2cf5ad770999n
 */
export function xxhash64(key: Key, seed: number | bigint = 0): bigint {
  const s = BigInt.asUintN(64, BigInt(seed));
  digestKey(key, Number(s >> 32n), Number(s & 0xffffffffn));
  return (BigInt(R[0]!) << 32n) | BigInt(R[1]!);
}
