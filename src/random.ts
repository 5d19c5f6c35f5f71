import type { RandomSource } from './types.js';

/**
 * A seeded uniform source in [0, 1): mulberry32 (Tommy Ettinger), 32 bits of state, a few ns per
 * call. Not cryptographic; chosen for speed and a full 2^32 period, which is plenty for picking.
 * The state lives in a typed array so V8 keeps it unboxed: a call allocates nothing.
 */
export function createRandom(seed: number): RandomSource {
  const state = new Uint32Array([seed >>> 0]);
  return () => {
    const s = (state[0]! + 0x6d2b79f5) >>> 0;
    state[0] = s;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
