import { ConfigError } from '../../errors.js';
import type { Key, ShardState } from '../../types.js';
import type { Gate } from './bounded.js';
import { DistinctWalk } from './distinct-walk.js';
import { type HashOrder, idBytes, KEY_SEED, type KeyHash } from './order.js';

/** Default table size: a prime, ~100 slots per shard up to 655 shards (Eisenbud et al. §3.4). */
export const DEFAULT_TABLE_SIZE = 65537;
/** Slots per shard below which Maglev's balance degrades past ~1 % (the paper's M ≥ 100 N). */
export const SLOTS_PER_SHARD = 100;

const OFFSET_SEED = 0x6d61676c;
const SKIP_SEED = 0x65762121;

/**
 * Maglev hashing (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load Balancer",
 * NSDI 2016, §3.4): every shard has a permutation of a prime-sized table, `(offset + j × skip)
 * mod M`, and shards take turns claiming their next free slot until the table is full. A key is
 * one table read; shares are even to within a slot, at the price of slightly more movement on a
 * membership change than a ring.
 *
 * Weights: a shard takes a turn only when `round × weight / maxWeight` has caught up with the
 * turns it took, so it claims slots in proportion to its weight (Envoy's weighted Maglev).
 *
 * When the key's shard is skipped (not offered, or over the load bound) the walk continues with
 * the next table slots in order: the slots after any one are owned by a weight-proportional,
 * pseudo-random run of shards, so a skipped shard's keys spread over the others by weight, and
 * come back when it does.
 */
export class Maglev implements HashOrder {
  private table = new Int32Array(0);
  private n = 0;
  private readonly walk = new DistinctWalk();

  /** @param tableSize an explicit prime table size, or undefined for the automatic size. */
  constructor(
    private readonly tableSize: number | undefined,
    private readonly hash: KeyHash,
  ) {}

  /** The table size used for `n` shards. */
  sizeFor(n: number): number {
    if (this.tableSize !== undefined) {
      if (this.tableSize < SLOTS_PER_SHARD * n) {
        throw new ConfigError(
          'consistentHash.tableSize',
          `must be at least ${SLOTS_PER_SHARD} × the shard count (${SLOTS_PER_SHARD * n} for ${n} shards) for Maglev to balance`,
          this.tableSize,
        );
      }
      return this.tableSize;
    }
    return n * SLOTS_PER_SHARD <= DEFAULT_TABLE_SIZE
      ? DEFAULT_TABLE_SIZE
      : nextPrime(n * SLOTS_PER_SHARD);
  }

  build(shards: readonly ShardState[]): void {
    const n = shards.length;
    const m = this.sizeFor(n);
    const table = new Int32Array(m).fill(-1);
    if (n > 0) {
      const ids = idBytes(shards);
      const next = new Float64Array(n);
      const skip = new Float64Array(n);
      const weight = new Float64Array(n);
      const turns = new Float64Array(n);
      let max = 0;
      for (let i = 0; i < n; i++) max = Math.max(max, shards[i]!.weight);
      for (let i = 0; i < n; i++) {
        next[i] = (this.hash(ids[i]!, OFFSET_SEED) >>> 0) % m;
        skip[i] = ((this.hash(ids[i]!, SKIP_SEED) >>> 0) % (m - 1)) + 1;
        weight[i] = shards[i]!.weight / max;
      }
      let filled = 0;
      for (let round = 1; filled < m; round++) {
        for (let i = 0; i < n && filled < m; i++) {
          if (round * weight[i]! < turns[i]!) continue;
          turns[i]! += 1;
          let c = next[i]!;
          while (table[c] !== -1) {
            c += skip[i]!;
            if (c >= m) c -= m;
          }
          table[c] = i;
          c += skip[i]!;
          next[i] = c >= m ? c - m : c;
          filled++;
        }
      }
    }
    this.table = table;
    this.n = n;
    this.walk.resize(n);
  }

  pick(key: Key, gate: Gate): number {
    const table = this.table;
    const m = table.length;
    if (this.n === 0) return -1;
    // Lemire's multiply-shift instead of `h % m`: a uint32 modulo is a floating-point fmod in V8,
    // several times dearer than this multiply, and the slot is as uniform.
    const c = Math.floor(((this.hash(key, KEY_SEED) >>> 0) * m) / 4294967296);
    const first = table[c]!;
    if (gate.accepts(first)) return first;
    // Skipped: the owners of the following slots, each asked once.
    return this.walk.next(table, c, first, this.n, gate);
  }
}

/** Deterministic trial division: table sizes are at most a few million, so √m ≤ a few thousand. */
export function isPrime(m: number): boolean {
  if (!Number.isInteger(m) || m < 2) return false;
  if (m % 2 === 0) return m === 2;
  for (let d = 3; d * d <= m; d += 2) if (m % d === 0) return false;
  return true;
}

/** The smallest prime ≥ m. */
export function nextPrime(m: number): number {
  let p = Math.max(2, Math.ceil(m));
  while (!isPrime(p)) p++;
  return p;
}
