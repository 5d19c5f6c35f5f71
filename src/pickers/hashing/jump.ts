import { ConfigError } from '../../base/errors.js';
import type { Key, ShardState } from '../../base/types.js';
import { fmix32 } from '../../hash/murmur3.js';
import { umulh32, xxhash64Into } from '../../hash/xxhash64.js';
import type { Gate } from './bounded.js';
import { type HashOrder, KEY_SEED, type KeyHash } from './order.js';

// 2862933555777941757, the LCG multiplier of the paper's reference code.
const LCG_H = 0x27bb2ee6;
const LCG_L = 0x87b0b0fd;
const TWO_POW_31 = 2147483648;
/** Rehashes tried before a linear scan, when the key's shard is skipped. */
const REHASHES = 32;

/**
 * Jump consistent hash (Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm",
 * 2014): the bucket of a 64-bit key among n, in O(ln n) steps and no memory at all. Growing n to
 * n + 1 moves exactly the keys that now land in bucket n, and only those. Buckets are membership
 * positions, so it suits append-only, numbered shards: removing a shard from the middle renumbers
 * the ones after it. It takes no weights.
 *
 * A skipped shard's key is rehashed and jumped again (up to 32 times, then the next positions in
 * turn): the rehash is a function of the key alone, so the key comes back when the shard does.
 */
export function jumpHash(hi: number, lo: number, n: number): number {
  let b = -1;
  let j = 0;
  while (j < n) {
    b = j;
    // key = key × 2862933555777941757 + 1 (mod 2^64), on uint32 halves.
    const nl = Math.imul(lo, LCG_L) >>> 0;
    hi = (umulh32(lo, LCG_L) + Math.imul(hi, LCG_L) + Math.imul(lo, LCG_H)) >>> 0;
    lo = (nl + 1) >>> 0;
    if (lo === 0) hi = (hi + 1) >>> 0;
    j = Math.floor((b + 1) * (TWO_POW_31 / ((hi >>> 1) + 1)));
  }
  return b;
}

export class Jump implements HashOrder {
  private n = 0;
  private readonly key64 = new Uint32Array(2);

  /** @param hash a custom 32-bit hash (two seeds make the 64-bit key), or undefined for XXH64. */
  constructor(private readonly hash: KeyHash | undefined) {}

  build(shards: readonly ShardState[]): void {
    const w = shards[0]?.weight;
    for (let i = 1; i < shards.length; i++) {
      if (shards[i]!.weight !== w) {
        throw new ConfigError(
          `shards[${i}].weight`,
          `must equal every other shard's weight (${w}) under consistentHash({ algorithm: 'jump' }), which takes no weights`,
          shards[i]!.weight,
        );
      }
    }
    this.n = shards.length;
  }

  /** Expected shares: 1/n each (jump spreads keys evenly over its buckets). */
  shares(): Float64Array {
    return new Float64Array(this.n).fill(1 / this.n);
  }

  pick(key: Key, gate: Gate): number {
    const n = this.n;
    if (n === 0) return -1;
    let hi: number;
    let lo: number;
    if (this.hash === undefined) {
      xxhash64Into(key, KEY_SEED, this.key64);
      hi = this.key64[0]!;
      lo = this.key64[1]!;
    } else {
      hi = this.hash(key, KEY_SEED) >>> 0;
      lo = this.hash(key, ~KEY_SEED >>> 0) >>> 0;
    }
    const first = jumpHash(hi, lo, n);
    if (gate.accepts(first)) return first;
    for (let r = 1; r <= REHASHES; r++) {
      hi = fmix32(hi ^ Math.imul(r, 0x9e3779b9) ^ lo);
      lo = fmix32(lo ^ Math.imul(r, 0x85ebca6b) ^ hi);
      const b = jumpHash(hi, lo, n);
      if (b !== first && gate.accepts(b)) return b;
    }
    for (let step = 1; step < n; step++) {
      const b = (first + step) % n;
      if (gate.accepts(b)) return b;
    }
    return -1;
  }
}
