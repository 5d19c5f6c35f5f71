import type { RandomSource } from './types.js';

/**
 * A seeded uniform source in [0, 1): mulberry32 (Tommy Ettinger), 32 bits of state, a few ns per
 * call. Not cryptographic; chosen for speed and a full 2^32 period, which is plenty for picking.
 */
export function createRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
