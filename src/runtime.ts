/**
 * The one module that reads the machine's clock and entropy (STYLE rule 2). Everything else takes
 * a `Clock` and a random source as parameters.
 */
import { randomBytes } from 'node:crypto';
import { createRandom } from './random.js';
import type { Clock, RandomSource } from './types.js';

/** The real clock: `performance.now()` and `setTimeout` (background timers are unref'd). */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer(fn, ms, background) {
    const timer = setTimeout(fn, ms);
    if (background === true) timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * A fast PRNG seeded from entropy. Never a fixed seed: producers sharing one would pick in
 * lockstep and herd onto the same shards.
 */
export function entropyRandom(): RandomSource {
  return createRandom(randomBytes(4).readUInt32LE(0));
}

/**
 * The wall clock, for what is an absolute time: an HTTP-date `Retry-After` needs `Date.now()`,
 * not the balancer's monotonic clock.
 */
export const wallClock = (): number => Date.now();
