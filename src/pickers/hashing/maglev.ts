import { ConfigError } from '../../base/errors.js';
import type { Key, ShardState } from '../../base/types.js';
import type { Gate } from './bounded.js';
import { DistinctWalk } from './distinct-walk.js';
import { fillTable } from './maglev-fill.js';
import { checkWeights, type HashOrder, idBytes, KEY_SEED, type KeyHash } from './order.js';
import { movedFraction, type SlotTable, slotOf, tableShares } from './slots.js';

/**
 * The automatic Maglev table sizes: primes near 65 536 × 10^k. The first membership takes the
 * smallest that gives ≥ 100 slots per shard (Eisenbud et al. §3.4: M ≥ 100 N keeps shares within
 * ~1 %), and the table keeps that size through every later membership change.
 */
export const MAGLEV_TABLE_SIZES: readonly [65537, 655373, 6553577] = [65537, 655373, 6553577];
/** Slots per shard the automatic size aims for (the paper's M ≥ 100 N). */
export const SLOTS_PER_SHARD = 100;
/**
 * The largest table: 10 000 019 slots (the first prime past 10^7) are 40 MB and about two seconds
 * to fill, the same scale as the ring's bound on points; past it a table would cost memory and
 * time out of proportion to any fleet (100 slots for each of 100 000 shards).
 */
export const MAX_TABLE_SIZE = 10_000_019;

const OFFSET_SEED = 0x6d61676c;
const SKIP_SEED = 0x65762121;

/**
 * Maglev hashing (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load Balancer",
 * NSDI 2016, §3.4): every shard has a permutation of a prime-sized table, `(offset + j × skip)
 * mod M`, and shards take turns claiming their next free slot until the table is full (weighted
 * as in Envoy, see `maglev-fill.ts`). A key is one table read; shares are even to within a slot.
 *
 * The size M is chosen once and kept: a shard's permutation depends on M, so a size that followed
 * the shard count would move nearly every key on any change (656 → 655 shards moved 99.8 %).
 * With M kept, adding or removing one of N shards moves about 6/N of the keys at 1000 shards
 * (1/N is the ideal). Fewer than 100 slots per shard still works, with shares less even (at 10
 * slots per shard a share is off by ~10 %); fewer slots than shards cannot, and `build()` refuses.
 * Growing is explicit: {@link Maglev.resize}.
 *
 * When the key's shard is skipped (not offered, or over the load bound) the walk continues with
 * the next table slots in order: the slots after any one are owned by a weight-proportional,
 * pseudo-random run of shards, so a skipped shard's keys spread over the others by weight, and
 * come back when it does.
 */
export class Maglev implements HashOrder {
  private table: SlotTable = new Uint16Array(0);
  private n = 0;
  private readonly walk = new DistinctWalk();

  /** @param size an explicit prime table size, or undefined to choose one at the first build. */
  constructor(
    private size: number | undefined,
    private readonly hash: KeyHash,
  ) {}

  /** The table size: fixed at the first non-empty build (or given), undefined until then. */
  get tableSize(): number | undefined {
    return this.size;
  }

  /** The owner of each slot, by membership index (read it, do not write it). */
  get slots(): SlotTable {
    return this.table;
  }

  build(shards: readonly ShardState[]): void {
    const n = shards.length;
    // An empty membership places no key, so it does not fix the size either.
    const m = this.size ?? (n === 0 ? 0 : initialTableSize(n));
    if (n > m && n > 0) {
      throw new ConfigError(
        'consistentHash.tableSize',
        n > MAX_TABLE_SIZE
          ? `must give every shard a slot: ${n} shards do not fit in ${m} slots, and Maglev tables hold at most ${MAX_TABLE_SIZE}`
          : `must give every shard a slot: ${n} shards do not fit in ${m} slots. Maglev keeps its table size through membership changes; call picker.resize(tableSize) with a prime ≥ ${n} (such as ${initialTableSize(n)}) before adding them`,
        m,
      );
    }
    this.table = this.fill(shards, m);
    this.size = n === 0 ? this.size : m;
    this.n = n;
    this.walk.resize(n);
  }

  /**
   * Rebuilds over `shards` (the current membership) with a table of `m` slots, and returns the
   * exact fraction of the 32-bit hash space whose shard changed. `m` is checked by the caller.
   */
  resize(shards: readonly ShardState[], m: number): number {
    const table = this.fill(shards, m);
    const moved = movedFraction(this.table, table);
    this.table = table;
    this.size = m;
    this.n = shards.length;
    this.walk.resize(this.n);
    return moved;
  }

  private fill(shards: readonly ShardState[], m: number): SlotTable {
    const n = shards.length;
    // Two bytes a slot while the owners fit: half the memory a lookup reads at random.
    const table = n <= 65536 ? new Uint16Array(n === 0 ? 0 : m) : new Int32Array(m);
    if (n === 0) return table;
    checkWeights(shards);
    const ids = idBytes(shards);
    const offset = new Float64Array(n);
    const skip = new Float64Array(n);
    const weight = new Float64Array(n);
    let max = 0;
    for (let i = 0; i < n; i++) max = Math.max(max, shards[i]!.weight);
    for (let i = 0; i < n; i++) {
      offset[i] = (this.hash(ids[i]!, OFFSET_SEED) >>> 0) % m;
      skip[i] = ((this.hash(ids[i]!, SKIP_SEED) >>> 0) % (m - 1)) + 1;
      weight[i] = shards[i]!.weight / max;
    }
    fillTable(table, offset, skip, weight);
    return table;
  }

  pick(key: Key, gate: Gate): number {
    if (this.n === 0) return -1;
    const table = this.table;
    const c = this.slot(key);
    const first = table[c]!;
    if (gate.accepts(first)) return first;
    // Skipped: the owners of the following slots, each asked once.
    return this.walk.next(table, -1, c, first, this.n, gate);
  }

  first(key: Key): number {
    return this.n === 0 ? -1 : this.table[this.slot(key)]!;
  }

  /** The key's slot in the table. */
  private slot(key: Key): number {
    return slotOf(this.hash(key, KEY_SEED) >>> 0, this.table.length);
  }

  shares(): Float64Array {
    return tableShares(this.table, this.n);
  }
}

/** A Maglev table size: a prime (the permutations need one) within the table bound. */
export function checkTableSize(field: string, value: unknown): number {
  if (typeof value !== 'number' || !isPrime(value) || value > MAX_TABLE_SIZE) {
    throw new ConfigError(
      field,
      `must be a prime integer from 2 to ${MAX_TABLE_SIZE} (Maglev permutations need a prime table; such as 65537, 655373 or 6553577)`,
      value,
    );
  }
  return value;
}

/** The size a first membership of `n` shards gets: the ladder, then the next prime ≥ 100 n. */
export function initialTableSize(n: number): number {
  const want = SLOTS_PER_SHARD * n;
  for (const size of MAGLEV_TABLE_SIZES) if (size >= want) return size;
  // Past 100 000 shards the largest table, with fewer slots per shard (build refuses < 1).
  return want <= MAX_TABLE_SIZE ? nextPrime(want) : MAX_TABLE_SIZE;
}

/** Deterministic trial division: table sizes are at most ~10^7, so √m ≤ ~3200. */
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
