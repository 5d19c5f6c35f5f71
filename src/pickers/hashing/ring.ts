import { ConfigError } from '../../base/errors.js';
import type { Key, ShardState } from '../../base/types.js';
import type { Gate } from './bounded.js';
import { DistinctWalk } from './distinct-walk.js';
import { checkWeights, type HashOrder, idBytes, KEY_SEED, type KeyHash } from './order.js';

/** The most ring points per unit of weight `consistentHash({ vnodes })` accepts. */
export const MAX_VNODES = 10_000;
/**
 * The most points a ring may hold, `Σ max(1, round(vnodes × weight))` over the shards: 10 000 000
 * points take ~200 MB and about a second to build, so a weight of 1e6 or 1e308 is refused at
 * once instead of exhausting memory.
 */
export const MAX_RING_POINTS = 10_000_000;

const RANK_SCALE = 2 ** 20;
/** Bucket bits whose `starts` (4 bytes a bucket) stays in a core's cache: 2^14, 64 KB. */
const CACHED_BUCKET_BITS = 14;
/** Points per bucket on rings too large for that: a scan of a cache line or two. */
const POINTS_PER_BUCKET = 8;
/** Past this many points a bucket (only a poor custom hash bunches them) search, don't scan. */
const SCAN_LIMIT = 16;
const TWO_POW_32 = 4294967296;

/**
 * A hash ring in the manner of ketama (Karger et al., "Consistent Hashing and Random Trees",
 * STOC 1997; libketama's points per server): each shard owns `vnodes × weight` pseudo-random
 * 32-bit points, a key goes to the owner of the first point at or after its hash, clockwise.
 * A shard's points depend on its id alone, so a join or leave moves only the keys of the arcs it
 * takes or gives up. Point j of a shard is `hash(id, j)`: one seeded hash per point rather than
 * ketama's md5 of "id-j" strings, so building 160 000 points takes milliseconds.
 *
 * Lookup: the points are cut into 2^B buckets by their top B bits — a point or two a bucket up to
 * 2^14 buckets, ~8 a bucket past that, and enough bits to number the owners; `starts` holds where
 * each bucket begins. Inside a bucket
 * every point shares its top bits, so an entry keeps only the point's low 32 − B bits, above its
 * owner's index, in one uint32: comparing entries compares points, and the owner comes with the
 * same read. A lookup reads `starts` (64 KB at 160 000 points, so it stays cached), then scans a
 * cache line or two of entries. Measured against a binary search over 2^16 buckets with separate
 * point and owner arrays (three dependent reads into ~1.5 MB): ~25 % less time a lookup once the
 * keys themselves crowd the caches; the random reads into a large array are the cost, not the
 * comparisons.
 */
export class Ring implements HashOrder {
  private entries = new Uint32Array(0);
  private starts = new Uint32Array(2);
  private bits = 16;
  /** 2^bits: an entry is (point's low bits) × scale + owner. */
  private scale = 2 ** 16;
  private n = 0;
  private readonly walk = new DistinctWalk();

  constructor(
    private readonly vnodes: number,
    private readonly hash: KeyHash,
  ) {}

  /** Points on the ring. */
  get points(): number {
    return this.entries.length;
  }

  build(shards: readonly ShardState[]): void {
    const n = shards.length;
    if (n >= RANK_SCALE) {
      throw new ConfigError('shards', `must be fewer than ${RANK_SCALE} for the ring`, n, {
        given: false,
      });
    }
    checkWeights(shards);
    const counts = this.pointCounts(shards);
    let total = 0;
    for (let i = 0; i < n; i++) total += counts[i]!;
    // Equal points (rare) are ordered by id, not by membership index, so that inserting a shard
    // mid-order does not hand a collided point to another old shard: the shards are visited in id
    // order, and a stable sort by point keeps that order among equal points.
    const byId = shards.map((_, i) => i).sort((a, b) => compare(shards[a]!.id, shards[b]!.id));
    const ids = idBytes(shards);
    let points = new Uint32Array(total);
    let ranks = new Uint32Array(total);
    let k = 0;
    for (let r = 0; r < n; r++) {
      const i = byId[r]!;
      const id = ids[i]!;
      for (let j = 0; j < counts[i]!; j++) {
        points[k] = this.hash(id, j) >>> 0;
        ranks[k++] = r;
      }
    }
    // LSD radix sort, 16 bits a pass: O(points), where a comparison sort of the same points
    // took ~2/3 of a rebuild (a rebuild is what a membership or weight change costs).
    let spare = new Uint32Array(total);
    let spareRanks = new Uint32Array(total);
    for (const shift of [0, 16]) {
      radixPass(points, ranks, spare, spareRanks, shift);
      [points, spare] = [spare, points];
      [ranks, spareRanks] = [spareRanks, ranks];
    }
    // A point or two a bucket while `starts` stays within 2^14 entries (64 KB, cached), then ~8
    // a bucket; and enough bucket bits to number the owners in the entry's low bits.
    const bits = Math.max(
      1,
      Math.ceil(Math.log2(n + 1)),
      Math.min(CACHED_BUCKET_BITS, Math.round(Math.log2(total))),
      Math.round(Math.log2(total / POINTS_PER_BUCKET)),
    );
    const span = 2 ** (32 - bits);
    const ownerScale = 2 ** bits;
    // The spare array is free now: it becomes the entries.
    const entries = spare;
    const starts = new Uint32Array(2 ** bits + 1);
    let b = 0;
    for (let p = 0; p < total; p++) {
      const point = points[p]!;
      const bucket = Math.floor(point / span);
      while (b <= bucket) starts[b++] = p;
      entries[p] = (point - bucket * span) * ownerScale + byId[ranks[p]!]!;
    }
    while (b < starts.length) starts[b++] = total;
    this.entries = entries;
    this.starts = starts;
    this.bits = bits;
    this.scale = ownerScale;
    this.n = n;
    this.walk.resize(n);
  }

  /** Points per shard, checked against {@link MAX_RING_POINTS} before anything is allocated. */
  private pointCounts(shards: readonly ShardState[]): Float64Array {
    const n = shards.length;
    const counts = new Float64Array(n);
    let total = 0;
    let heaviest = 0;
    for (let i = 0; i < n; i++) {
      counts[i] = Math.max(1, Math.round(this.vnodes * shards[i]!.weight));
      total += counts[i]!;
      if (shards[i]!.weight > shards[heaviest]!.weight) heaviest = i;
    }
    if (total <= MAX_RING_POINTS) return counts;
    const count = Number.isFinite(total) ? total.toPrecision(4) : 'beyond 1.8e+308';
    const computed = `Σ max(1, round(vnodes × weight)) over ${n} shards is ${count} ring points, above the bound of ${MAX_RING_POINTS}`;
    // Name what to change: the weights when unit weights would have fitted, else vnodes.
    if (this.vnodes * n <= MAX_RING_POINTS && shards[heaviest]!.weight > 1) {
      throw new ConfigError(
        `shards[${heaviest}].weight`,
        `is too large for the ring (vnodes ${this.vnodes}): ${computed}; use smaller weights (relative capacities) or fewer vnodes`,
        shards[heaviest]!.weight,
      );
    }
    throw new ConfigError(
      'consistentHash.vnodes',
      `is too large for this membership: ${computed}; lower vnodes or the weights`,
      this.vnodes,
    );
  }

  pick(key: Key, gate: Gate): number {
    const k = this.position(key);
    if (k < 0) return -1;
    const entries = this.entries;
    const mask = this.scale - 1;
    const first = entries[k]! & mask;
    if (gate.accepts(first)) return first;
    // Skipped: the next distinct owners clockwise, each asked once.
    return this.walk.next(entries, mask, k, first, this.n, gate);
  }

  first(key: Key): number {
    const k = this.position(key);
    return k < 0 ? -1 : this.entries[k]! & (this.scale - 1);
  }

  /** The entry of the key's point: the first at or after its hash, clockwise; −1 on no ring. */
  private position(key: Key): number {
    const entries = this.entries;
    const total = entries.length;
    if (total === 0) return -1;
    const h = this.hash(key, KEY_SEED) >>> 0;
    const bits = this.bits;
    const b = h >>> (32 - bits);
    // The hash's low bits, shifted above the owner bits: entry ≥ target ⇔ point ≥ h in bucket b.
    // Integer shifts keep the comparisons on uint32 (a multiply would make them float).
    const target = ((h & (-1 >>> bits)) << bits) >>> 0;
    let lo = this.starts[b]!;
    let hi = this.starts[b + 1]!;
    if (hi - lo <= SCAN_LIMIT) {
      while (lo < hi && entries[lo]! < target) lo++;
    } else {
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (entries[mid]! < target) lo = mid + 1;
        else hi = mid;
      }
    }
    // Past the bucket's points: the next bucket's first point (lo), or the ring's first.
    return lo === total ? 0 : lo;
  }

  /**
   * Each shard's share of the 32-bit hash space, by arc length: a point owns the hashes after the
   * previous point up to itself, the first point also those past the last (equal points after
   * the first own nothing, as lookup never reaches them).
   */
  shares(): Float64Array {
    const out = new Float64Array(this.n);
    const total = this.entries.length;
    if (total === 0) return out;
    const bits = this.bits;
    const span = 2 ** (32 - bits);
    const mask = 2 ** bits - 1;
    const starts = this.starts;
    let previous = -1;
    let first = -1;
    for (let b = 0; b + 1 < starts.length; b++) {
      for (let p = starts[b]!; p < starts[b + 1]!; p++) {
        const e = this.entries[p]!;
        const point = b * span + Math.floor(e / 2 ** bits);
        if (first < 0) first = point;
        else out[e & mask]! += point - previous;
        previous = point;
      }
    }
    out[this.entries[0]! & mask]! += TWO_POW_32 - previous + first;
    for (let i = 0; i < out.length; i++) out[i]! /= TWO_POW_32;
    return out;
  }
}

/** Counts of one 16-bit digit, reused across passes and builds. */
const digitCounts = new Uint32Array(65_536);

/**
 * One stable counting-sort pass of (point, rank) pairs by the point's 16 bits at `shift`, from
 * `points`/`ranks` into `toPoints`/`toRanks`.
 */
function radixPass(
  points: Uint32Array,
  ranks: Uint32Array,
  toPoints: Uint32Array,
  toRanks: Uint32Array,
  shift: number,
): void {
  const counts = digitCounts;
  counts.fill(0);
  const total = points.length;
  for (let p = 0; p < total; p++) counts[(points[p]! >>> shift) & 0xffff]!++;
  let at = 0;
  for (let d = 0; d < 65_536; d++) {
    const c = counts[d]!;
    counts[d] = at;
    at += c;
  }
  for (let p = 0; p < total; p++) {
    const to = counts[(points[p]! >>> shift) & 0xffff]!++;
    toPoints[to] = points[p]!;
    toRanks[to] = ranks[p]!;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
