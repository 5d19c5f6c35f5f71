import { describe, expect, it } from 'vitest';
import { fmix32, murmur3_32, murmur3_32Bytes } from '../../src/hash/index.js';

const bytes = (...b: number[]) => Uint8Array.from(b);
const utf8 = (s: string) => new TextEncoder().encode(s);

// Published vectors for MurmurHash3_x86_32 (SMHasher reference; the widely cited set from
// https://stackoverflow.com/questions/14747343/murmurhash3-test-vectors).
const VECTORS: [Uint8Array | string, number, number][] = [
  [bytes(), 0, 0],
  [bytes(), 1, 0x514e28b7],
  [bytes(), 0xffffffff, 0x81f16f39],
  [bytes(0xff, 0xff, 0xff, 0xff), 0, 0x76293b50],
  [bytes(0x21, 0x43, 0x65, 0x87), 0, 0xf55b516b],
  [bytes(0x21, 0x43, 0x65, 0x87), 0x5082edee, 0x2362f9de],
  [bytes(0x21, 0x43, 0x65), 0, 0x7e4a8634],
  [bytes(0x21, 0x43), 0, 0xa0f7b07a],
  [bytes(0x21), 0, 0x72661cf4],
  [bytes(0, 0, 0, 0), 0, 0x2362f9de],
  [bytes(0, 0, 0), 0, 0x85f0b427],
  [bytes(0, 0), 0, 0x30f4c306],
  [bytes(0), 0, 0x514e28b7],
  ['a', 0x9747b28c, 0x7fa09ea6],
  ['aa', 0x9747b28c, 0x5d211726],
  ['aaa', 0x9747b28c, 0x283e0130],
  ['aaaa', 0x9747b28c, 0x5a97808a],
  ['abc', 0x9747b28c, 0xc84a62dd],
  ['abcd', 0x9747b28c, 0xf0478627],
  ['Hello, world!', 0x9747b28c, 0x24884cba],
  ['ππππππππ', 0x9747b28c, 0xd58063c1],
  ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
  ['The quick brown fox jumps over the lazy dog', 0, 0x2e4ff723],
];

describe('murmur3_32', () => {
  it.each(VECTORS)('matches the published vector %#', (key, seed, expected) => {
    expect(murmur3_32(key, seed)).toBe(expected);
    const b = typeof key === 'string' ? utf8(key) : key;
    expect(murmur3_32(b, seed)).toBe(expected);
    expect(murmur3_32Bytes(b, b.length, seed)).toBe(expected);
  });

  it('hashes a string as its UTF-8 bytes, on the ASCII and the non-ASCII path', () => {
    for (const s of [
      'ascii-only',
      'é',
      'añb',
      'xyz€',
      '🌵🌵',
      'mixed ascii then ü at the end',
      'ü at the start',
    ]) {
      expect(murmur3_32(s, 42)).toBe(murmur3_32(utf8(s), 42));
    }
    // A long non-ASCII key grows the scratch buffer; the hash must not depend on its size.
    const long = 'ж'.repeat(5000);
    expect(murmur3_32(long, 7)).toBe(murmur3_32(utf8(long), 7));
    expect(murmur3_32('après', 7)).toBe(murmur3_32(utf8('après'), 7));
  });

  it('returns an unsigned 32-bit integer and depends on the seed', () => {
    const h = murmur3_32('key', 1);
    expect(Number.isInteger(h) && h >= 0 && h < 2 ** 32).toBe(true);
    expect(murmur3_32('key', 2)).not.toBe(h);
  });

  it('fmix32 is the MurmurHash3 finalizer (fmix32(0) = 0, and a bijection on samples)', () => {
    expect(fmix32(0)).toBe(0);
    // hash("", seed) is fmix32(seed) since the length is 0.
    expect(fmix32(1)).toBe(0x514e28b7);
    const seen = new Set<number>();
    for (let i = 0; i < 10_000; i++) seen.add(fmix32(i));
    expect(seen.size).toBe(10_000);
  });
});
