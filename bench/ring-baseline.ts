/**
 * The ring lookup as it was before the bucket scan (shardwise 0.1): the same points and owners,
 * searched by a binary search narrowed by a 2^16-entry table of the hash's top bits, with points
 * and owners in separate arrays. Kept here as the in-run baseline of `hashing.bench.ts`: it places
 * every key exactly where the current ring does (the bench checks), so the difference in time is
 * the lookup alone.
 */

import type { Key, ShardState } from '../src/base/types.js';
import { murmur3_32 } from '../src/hash/murmur3.js';
import type { Gate } from '../src/pickers/hashing/bounded.js';
import { type HashOrder, idBytes, KEY_SEED } from '../src/pickers/hashing/order.js';

const RANK_SCALE = 2 ** 20;

export class BaselineRing implements HashOrder {
  private points = new Uint32Array(0);
  private owners = new Int32Array(0);
  private starts = new Uint32Array(1);
  private shift = 32;

  constructor(private readonly vnodes = 160) {}

  build(shards: readonly ShardState[]): void {
    const n = shards.length;
    const counts = shards.map((s) => Math.max(1, Math.round(this.vnodes * s.weight)));
    const total = counts.reduce((a, b) => a + b, 0);
    const byId = shards.map((_, i) => i).sort((a, b) => (shards[a]!.id < shards[b]!.id ? -1 : 1));
    const rankOf = new Int32Array(n);
    for (let r = 0; r < n; r++) rankOf[byId[r]!] = r;
    const packed = new Float64Array(total);
    const ids = idBytes(shards);
    let k = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < counts[i]!; j++) {
        packed[k++] = (murmur3_32(ids[i]!, j) >>> 0) * RANK_SCALE + rankOf[i]!;
      }
    }
    packed.sort();
    const points = new Uint32Array(total);
    const owners = new Int32Array(total);
    for (let p = 0; p < total; p++) {
      const point = Math.floor(packed[p]! / RANK_SCALE);
      points[p] = point;
      owners[p] = byId[packed[p]! - point * RANK_SCALE]!;
    }
    const bits = Math.min(16, Math.max(1, Math.floor(Math.log2(total))));
    const shift = 32 - bits;
    const starts = new Uint32Array((1 << bits) + 1);
    let p = 0;
    for (let b = 0; b <= 1 << bits; b++) {
      while (p < total && points[p]! >>> shift < b) p++;
      starts[b] = p;
    }
    this.points = points;
    this.owners = owners;
    this.starts = starts;
    this.shift = shift;
  }

  /** The first owner only (the bench offers every shard, so no walk is needed). */
  pick(key: Key, gate: Gate): number {
    const points = this.points;
    const total = points.length;
    if (total === 0) return -1;
    const h = murmur3_32(key, KEY_SEED) >>> 0;
    const b = h >>> this.shift;
    let lo = this.starts[b]!;
    let hi = this.starts[b + 1]!;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (points[mid]! < h) lo = mid + 1;
      else hi = mid;
    }
    const first = this.owners[lo === total ? 0 : lo]!;
    return gate.accepts(first) ? first : -1;
  }

  shares(): Float64Array {
    return new Float64Array(0);
  }
}
