import type { RandomSource } from './types.js';

/** The sources `createRandom` made (the default, `seededRandom`): in [0, 1) by construction. */
const OURS = new WeakSet<RandomSource>();

/**
 * A seeded uniform source in [0, 1): mulberry32 (Tommy Ettinger), 32 bits of state, a few ns per
 * call. Not cryptographic; chosen for speed and a full 2^32 period, which is plenty for picking.
 * The state lives in a typed array so V8 keeps it unboxed: a call allocates nothing.
 */
export function createRandom(seed: number): RandomSource {
  const state = new Uint32Array([seed >>> 0]);
  const random = () => {
    const s = (state[0]! + 0x6d2b79f5) >>> 0;
    state[0] = s;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  OURS.add(random);
  return random;
}

/** The largest double below 1. */
const BELOW_ONE = 1 - 2 ** -53;

/**
 * A caller's random source, held to [0, 1): values inside pass unchanged; one outside (a
 * generator that divides by 2^32 − 1 and so returns 1 now and then, a NaN, a scale slip) is
 * clamped into it. A faulty source then skews picks, but never sends an index out of range and
 * fails a run with a picker error that names neither the source nor the value.
 */
export function boundedRandom(random: RandomSource): RandomSource {
  // Ours are not wrapped: a pick's call of the source stays one function V8 inlines (a second
  // function seen at that call site makes it polymorphic, and each draw then allocates its
  // number: 32 bytes a p2c pick in bench/pickers.bench.ts).
  if (OURS.has(random)) return random;
  return () => {
    const r = random();
    if (r >= 0 && r < 1) return r;
    return r >= 1 ? BELOW_ONE : 0;
  };
}
