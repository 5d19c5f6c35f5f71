/**
 * The shapes of consistent hashing: options, the picker's interface, its description and rehash
 * event. Types only: the factory and the implementation import them.
 */
import type { Key, Picker, ShardState } from '../../base/types.js';
import type { KeyHash } from './order.js';

/** The consistent-hashing algorithms of {@link consistentHash}. */
export type HashAlgorithm = 'ring' | 'maglev' | 'rendezvous' | 'jump';

/** Where a keyed run may go: only its key's home shard, or on along the key's order. */
export type Affinity = 'strict' | 'spill';

/** Options of {@link consistentHash}; every field is optional. */
export interface ConsistentHashOptions {
  /**
   * `'ring'` (default): ketama-style ring with the least movement on a change (only the keys of
   * the shard that joins or leaves) but the least even shares: max/mean keys per shard measured
   * at 1.11 (8 shards), 1.17 (100) and 1.27 (1000) with 160 vnodes and 1M keys, as a shard's
   * share varies by ~1/√vnodes — raise `vnodes` for a more even ring. `'maglev'`: one table read
   * per key (the fastest lookup while the table stays in cache) and shares even to within a
   * slot (1.003, 1.03 and 1.09 over the same keys: the rest is the keys' sampling noise); one
   * shard more or less moves 1–7 × the ideal 1/N of the keys.
   * `'rendezvous'`: weighted highest-random-weight, even (1.004, 1.02, 1.11) and minimal
   * movement, O(n) per pick, for tens of shards. `'jump'`: no memory, O(ln n), for append-only
   * numbered shards with equal weights (removing a middle shard renumbers the rest).
   */
  algorithm?: HashAlgorithm;
  /**
   * Ring only: points per unit of weight (default 160, as in ketama), a positive integer up to
   * 10 000. The ring holds `Σ max(1, round(vnodes × weight))` points, at most 10 000 000: a
   * membership past that bound is refused by `rebuild()` with a `ConfigError`.
   */
  vnodes?: number;
  /**
   * Maglev only: the table size, a prime from 2 to 10 000 019. Default: chosen at the first
   * non-empty membership, the smallest of 65537, 655373, 6553577 with ≥ 100 slots per shard.
   * Either way the size is kept through membership changes (so a change moves few keys); fewer
   * than 100 slots per shard balances less evenly, fewer slots than shards is a `ConfigError`.
   * Grow it with `picker.resize(tableSize)`.
   */
  tableSize?: number;
  /**
   * Bounded loads (Mirrokni et al.): the factor c ≥ 1 (typically 1.25) in the per-shard bound
   * `ceil(c × (totalInFlight + 1) / n)`; a shard at the bound is skipped and the key spills to the
   * next shard of its order. Off when absent. Implies `affinity: 'spill'`.
   */
  boundedLoad?: number;
  /**
   * `'strict'` (default, unless `boundedLoad` is set): a keyed run goes to its key's home shard
   * only — it waits there while the shard is at its cap or ejected, and retries there (Kafka's
   * keyed partitioner). `'spill'`: it may go on to the next shard of the key's order when the home
   * is capped, ejected or already tried; every such displacement is counted and evented.
   */
  affinity?: Affinity;
  /**
   * A custom 32-bit hash `(key, seed) => uint32` of a key's bytes (UTF-8 for strings), for keys
   * and shard placement alike (default `murmur3_32`). `jump` then builds its 64-bit key from two
   * seeds; without a custom hash it uses XXH64.
   */
  hash?: KeyHash;
  /** The picker for runs without a key. Without it such a run throws `MissingKeyError`. */
  fallback?: Picker;
}

import type { RehashEvent } from '../../base/events.js';

export type { RehashEvent };

/** A snapshot of a consistent-hash picker's placement, from `describe()`. */
export interface HashDescription {
  algorithm: HashAlgorithm;
  /** Maglev: the table size (absent before the first non-empty membership). */
  tableSize?: number;
  /** Ring: the number of points. */
  points?: number;
  /**
   * Each shard of the membership, in order, with its share of the keys: exact over the 32-bit
   * key-hash space for `ring` (arc lengths) and `maglev` (slot intervals); the expected share
   * for `rendezvous` (weight / Σ weight) and `jump` (1/n). The shares sum to 1.
   */
  shards: { id: string; share: number }[];
}

/**
 * What {@link consistentHash} returns: a keyed {@link Picker} that counts its spills, tells a
 * key's home, describes its placement and, for Maglev, resizes its table on request.
 *
 * @example
 * const picker = consistentHash({ algorithm: 'maglev' });
 * picker.rebuild(balancer.shards);
 * picker.home(balancer.shards, 'customer-42')?.id; // where the key lives
 * picker.describe().shards; // [{ id, share }, …]
 * picker.onRehash((e) => log(`moved ${e.moved}`));
 * picker.resize(655373);
 */
export interface ConsistentHashPicker extends Picker {
  readonly name: `consistent-hash:${HashAlgorithm}`;
  readonly keyed: true;
  /**
   * `'strict'` or `'spill'` (see {@link ConsistentHashOptions.affinity}). The balancer enforces
   * it: under `'strict'` it sends a keyed run only to `home()`. `pick()` is the spill walk
   * whatever the affinity; a standalone user who wants the strict answer calls `home()`.
   */
  readonly affinity: Affinity;
  /** Picks sent past the key's first offered shard because it was at the load bound. */
  readonly spills: number;
  /** The picker for runs without a key (`ConsistentHashOptions.fallback`), if one was given. */
  readonly fallback: Picker | undefined;
  rebuild(shards: readonly ShardState[]): void;
  /**
   * The key's home among `shards` (a subset of the membership, in membership order): the first
   * shard of the key's own order that is offered, ignoring `boundedLoad`. Pure (no spill
   * counted), no allocation. `undefined` when `shards` is empty.
   */
  home(shards: readonly ShardState[], key: Key): ShardState | undefined;
  /** Algorithm, size and each shard's share, computed on call (O(points) or O(table)). */
  describe(): HashDescription;
  /**
   * Maglev only: rebuilds the table over the current membership with `tableSize` slots (a prime
   * ≥ the shard count, ≤ 10 000 019), keeps that size from then on, tells every `onRehash`
   * listener, and returns the event. A `ConfigError` for other algorithms or a bad size.
   */
  resize(tableSize: number): RehashEvent;
  /** Calls `listener` after each `resize()`; returns a function that unsubscribes it. */
  onRehash(listener: (event: RehashEvent) => void): () => void;
}
