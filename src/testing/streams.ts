/**
 * Independent seeded streams: each consumer of randomness in a simulation (arrivals, keys, each
 * shard's latency) gets its own seed, derived from the run's seed and a label, so adding draws to
 * one stream never shifts another.
 */
import { fmix32 } from '../hash/murmur3.js';

/** A 32-bit seed for the stream `label` of a run seeded with `seed` (FNV-1a, then murmur3's fmix32). */
export function streamSeed(seed: number, label: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  h = Math.imul(h, 0x01000193);
  h ^= Math.floor(seed / 4294967296) >>> 0;
  h = Math.imul(h, 0x01000193);
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}
