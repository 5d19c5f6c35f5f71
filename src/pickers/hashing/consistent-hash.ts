import { ConfigError, describe, MissingKeyError } from '../../errors.js';
import { murmur3_32 } from '../../hash/murmur3.js';
import type { Picker, PickRequest, ShardState } from '../../types.js';
import { checkKnownKeys, checkObject, oneOf, positiveInt } from '../../validate.js';
import { Gate, loadBound } from './bounded.js';
import { Jump } from './jump.js';
import { isPrime, Maglev } from './maglev.js';
import type { HashOrder, KeyHash } from './order.js';
import { Rendezvous } from './rendezvous.js';
import { Ring } from './ring.js';

/** The consistent-hashing algorithms of {@link consistentHash}. */
export type HashAlgorithm = 'ring' | 'maglev' | 'rendezvous' | 'jump';

const ALGORITHMS: readonly HashAlgorithm[] = ['ring', 'maglev', 'rendezvous', 'jump'];
const OPTIONS = ['algorithm', 'vnodes', 'tableSize', 'boundedLoad', 'hash', 'fallback'];

/** Options of {@link consistentHash}; every field is optional. */
export interface ConsistentHashOptions {
  /**
   * `'ring'` (default): ketama-style ring, least movement on change, max/mean ~1.1–1.2 at 160
   * vnodes. `'maglev'`: one table read per key and near-perfect balance, a little more movement
   * on change. `'rendezvous'`: weighted highest-random-weight, O(n) per pick, for small n.
   * `'jump'`: no memory, O(ln n), for append-only numbered shards with equal weights.
   */
  algorithm?: HashAlgorithm;
  /** Ring only: points per unit of weight (default 160, as in ketama). A positive integer. */
  vnodes?: number;
  /**
   * Maglev only: table size, a prime of at least 100 × the shard count (checked at rebuild).
   * Default 65537, grown to the next prime ≥ 100 × shards past 655 shards.
   */
  tableSize?: number;
  /**
   * Bounded loads (Mirrokni et al.): the factor c ≥ 1 (typically 1.25) in the per-shard bound
   * `ceil(c × (totalInFlight + 1) / n)`; a shard at the bound is skipped and the key spills to the
   * next shard of its order. Off when absent.
   */
  boundedLoad?: number;
  /**
   * A custom 32-bit hash `(key, seed) => uint32` of a key's bytes (UTF-8 for strings), for keys
   * and shard placement alike (default `murmur3_32`). `jump` then builds its 64-bit key from two
   * seeds; without a custom hash it uses XXH64.
   */
  hash?: KeyHash;
  /** The picker for runs without a key. Without it such a run throws `MissingKeyError`. */
  fallback?: Picker;
}

/** What {@link consistentHash} returns: a keyed {@link Picker} that counts its spills. */
export interface ConsistentHashPicker extends Picker {
  readonly name: `consistent-hash:${HashAlgorithm}`;
  readonly keyed: true;
  /** Picks sent past the key's first offered shard because it was at the load bound. */
  readonly spills: number;
  rebuild(shards: readonly ShardState[]): void;
}

/**
 * Consistent hashing: a key goes to the same shard while membership is stable, a membership
 * change moves few keys, and with `boundedLoad` no shard piles up. A shard that is not offered
 * (ejected, at its cap, excluded for a retry) is skipped in the key's own order, so its keys go
 * to their next shard and come back when it returns. When no shard in the key's order is under
 * the load bound, the key's first offered shard is returned anyway: refusing would fail the run
 * while shards can take it.
 *
 * @example
 * new Balancer({ shards, picker: consistentHash({ algorithm: 'maglev', boundedLoad: 1.25 }) });
 * balancer.run((shard) => put(shard.target, row), { key: row.userId });
 */
export function consistentHash(options: ConsistentHashOptions = {}): ConsistentHashPicker {
  checkObject('consistentHash options', options);
  checkKnownKeys('consistentHash', options, OPTIONS);
  const algorithm =
    options.algorithm === undefined
      ? 'ring'
      : oneOf('consistentHash.algorithm', options.algorithm, ALGORITHMS);
  only('vnodes', options.vnodes, algorithm, 'ring');
  only('tableSize', options.tableSize, algorithm, 'maglev');
  const vnodes =
    options.vnodes === undefined ? 160 : positiveInt('consistentHash.vnodes', options.vnodes);
  const tableSize = options.tableSize;
  if (tableSize !== undefined && (!isPrime(tableSize) || tableSize > 2 ** 31 - 1)) {
    throw new ConfigError(
      'consistentHash.tableSize',
      'must be a prime integer below 2^31 (Maglev permutations need a prime table)',
      tableSize,
    );
  }
  const c = options.boundedLoad;
  if (c !== undefined && (typeof c !== 'number' || !Number.isFinite(c) || c < 1)) {
    throw new ConfigError('consistentHash.boundedLoad', 'must be a finite number ≥ 1', c);
  }
  if (options.hash !== undefined && typeof options.hash !== 'function') {
    throw new ConfigError(
      'consistentHash.hash',
      'must be a function (key, seed) => uint32',
      options.hash,
    );
  }
  const fallback = options.fallback;
  if (
    fallback !== undefined &&
    (typeof fallback !== 'object' || fallback === null || typeof fallback.pick !== 'function')
  ) {
    throw new ConfigError(
      'consistentHash.fallback',
      'must be a Picker (an object with pick())',
      fallback,
    );
  }
  const hash = options.hash ?? murmur3_32;
  const order: HashOrder =
    algorithm === 'ring'
      ? new Ring(vnodes, hash)
      : algorithm === 'maglev'
        ? new Maglev(tableSize, hash)
        : algorithm === 'rendezvous'
          ? new Rendezvous(hash)
          : new Jump(options.hash);
  return new ConsistentHash(`consistent-hash:${algorithm}`, order, c, fallback);
}

function only(field: string, value: unknown, algorithm: HashAlgorithm, owner: HashAlgorithm): void {
  if (value !== undefined && algorithm !== owner) {
    throw new ConfigError(
      `consistentHash.${field}`,
      `applies only to algorithm '${owner}' (algorithm is '${algorithm}')`,
      value,
    );
  }
}

class ConsistentHash implements ConsistentHashPicker {
  readonly keyed = true;
  spills = 0;
  private membership: readonly ShardState[] = [];
  private built = false;
  private readonly gate = new Gate();

  constructor(
    readonly name: `consistent-hash:${HashAlgorithm}`,
    private readonly order: HashOrder,
    private readonly c: number | undefined,
    private readonly fallback: Picker | undefined,
  ) {}

  rebuild(shards: readonly ShardState[]): void {
    this.order.build(shards);
    // Copied: the caller may reuse its array, and the membership must be the one built for.
    this.membership = shards.slice();
    this.built = true;
    this.fallback?.rebuild?.(shards);
  }

  pick(shards: readonly ShardState[], request: PickRequest): ShardState | undefined {
    const key = request.key;
    if (key === undefined) {
      if (this.fallback !== undefined) return this.fallback.pick(shards, request);
      throw new MissingKeyError(this.name);
    }
    if (typeof key !== 'string' && !(key instanceof Uint8Array)) {
      throw new TypeError(`\`key\` must be a string or a Uint8Array, got ${describe(key)}`);
    }
    // A standalone user may pick before any rebuild, or offer shards it never rebuilt for.
    if (!this.built || shards.length > this.membership.length) this.rebuild(shards);
    if (shards.length === 0) return undefined;
    const n = this.membership.length;
    const gate = this.gate;
    gate.begin(shards, n, this.c === undefined ? Number.POSITIVE_INFINITY : this.bound(request, n));
    const i = this.order.pick(key, gate);
    if (i >= 0) {
      if (i !== gate.firstOffered) this.spills++;
      return gate.offered(i);
    }
    return gate.firstOffered >= 0 ? gate.offered(gate.firstOffered) : undefined;
  }

  private bound(request: PickRequest, n: number): number {
    let total = request.totalInFlight;
    if (typeof total !== 'number' || !Number.isFinite(total)) {
      total = 0;
      for (const s of this.membership) total += s.inFlight;
    }
    return loadBound(this.c!, total, n);
  }
}
