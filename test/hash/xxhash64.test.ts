import { describe, expect, it } from 'vitest';
import { xxhash64, xxhash64Into } from '../../src/hash/index.js';

const utf8 = (s: string) => new TextEncoder().encode(s);

// Published XXH64 vectors (xxHash reference implementation outputs, as checked by several
// independent ports' test suites), covering every code path: empty, < 4, 4–7, 8–31 and ≥ 32
// bytes, non-ASCII input and non-zero seeds.
const VECTORS: [string, number, bigint][] = [
  ['', 0, 0xef46db3751d8e999n],
  ['', 668718853, 0x04e830582a31a119n],
  ['a', 0, 0xd24ec4f1a98c6e5bn],
  ['a', 191961062, 0x6e05ba2887c97977n],
  ['ab', 0, 7347350983217793633n],
  ['abc', 0, 0x44bc2cf5ad770999n],
  ['ABC', 0, 0xe66ae7354fcfee98n],
  ['abcd', 0, 0xde0327b0d25d92ccn],
  ['heiå', 0, 0xb9d3d990d2001a1an],
  ['xxhash', 0, 0x32dd38952c4bc720n],
  ['123456789112345', 0, 0x3fe21a05d12d6937n],
  ['1234567891123456', 0, 0x2658b09cc412f64bn],
  ['abcdefghijklmnopqrstuvwxyz12345', 0, 0x467605901b01d6f6n],
  ['abcdefghijklmnopqrstuvwxyz12345', 877380273, 0x37b562ec5715e132n],
  ['abcdefghijklmnopqrstuvwxyz123456', 0, 0x0022ee3b5a18531bn],
  ['abcdefghijklmnopqrstuvwxyz1234567', 0, 0x23bbd16d29353c5fn],
  ['测试', 0, 0x403d66837e9bc61fn],
  ['测试', 1332727061, 0x8b79d3346ad56ea2n],
  ['鹅鹅鹅，曲项向天歌。白毛浮绿水，红掌拨清波', 0, 0x497ad04e6a197d28n],
  [
    '12345678901234567890123456789012345678901234567890123456789012345678901234567890',
    0,
    0xe04a477f19ee145dn,
  ],
];

describe('xxhash64', () => {
  it.each(VECTORS)('matches the published vector for %j (seed %d)', (key, seed, expected) => {
    expect(xxhash64(key, seed)).toBe(expected);
    expect(xxhash64(utf8(key), BigInt(seed))).toBe(expected);
    const out = xxhash64Into(key, seed, new Uint32Array(2));
    expect(out[0]).toBe(Number(expected >> 32n));
    expect(out[1]).toBe(Number(expected & 0xffffffffn));
  });

  it('takes the full 64-bit seed', () => {
    expect(xxhash64('abc', 2n ** 32n)).not.toBe(xxhash64('abc', 0));
    expect(xxhash64('abc', 2 ** 32)).toBe(xxhash64('abc', 2n ** 32n));
    expect(xxhash64('abc', -1n)).toBe(xxhash64('abc', 2n ** 64n - 1n));
  });

  it('hashes a Uint8Array view at its own offset', () => {
    const backing = utf8('..abc..');
    expect(xxhash64(backing.subarray(2, 5))).toBe(0x44bc2cf5ad770999n);
  });
});
