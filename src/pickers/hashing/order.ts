import { ConfigError } from '../../base/errors.js';
import type { Key, ShardState } from '../../base/types.js';
import type { Gate } from './bounded.js';

/**
 * A 32-bit seeded hash of a key's bytes (UTF-8 for strings), as an unsigned integer. The default
 * is `murmur3_32`; a custom one must be deterministic across processes and spread its output
 * over all 32 bits (every point, slot and score is derived from it).
 */
export type KeyHash = (key: Key, seed: number) => number;

/**
 * One consistent-hashing algorithm: a snapshot of the membership, built in `build()`, that
 * walks a key's own order of shards in `pick()`.
 */
export interface HashOrder {
  /** Rebuilds from the full membership (stable order); throws `ConfigError` when it cannot. */
  build(shards: readonly ShardState[]): void;
  /** Membership index of the first shard in `key`'s order that `gate` accepts, or −1. */
  pick(key: Key, gate: Gate): number;
  /**
   * Membership index of the first shard in `key`'s order, or −1 when there is none: what `pick`
   * starts from, for the common pick where every shard is offered and no bound applies. Present
   * where that is one read (a ring point, a table slot); absent, the picker asks `pick`.
   */
  first?(key: Key): number;
  /**
   * Each shard's share of the keys, by membership index: exact over the 32-bit key-hash space
   * for tables and rings, expected for the others. Computed on call, off the hot path.
   */
  shares(): Float64Array;
}

/** Seed of the key hash, apart from the seeds that place shards, so the two never correlate. */
export const KEY_SEED = 0x2f1d3a55;

/** The UTF-8 bytes of every shard id, hashed at build time with per-purpose seeds. */
export function idBytes(shards: readonly ShardState[]): Uint8Array[] {
  const encoder = new TextEncoder();
  return shards.map((s) => encoder.encode(s.id));
}

/**
 * Every weight a positive finite number: the core checks `ShardSpec.weight`, but a standalone
 * user builds from shards of their own, and one NaN would make every score or share NaN.
 */
export function checkWeights(shards: readonly ShardState[]): void {
  for (let i = 0; i < shards.length; i++) {
    const w = shards[i]!.weight;
    if (typeof w !== 'number' || !Number.isFinite(w) || w <= 0) {
      throw new ConfigError(`shards[${i}].weight`, 'must be a positive finite number', w);
    }
  }
}
