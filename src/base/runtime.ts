/**
 * The one module that reads the machine's clock and entropy (STYLE rule 2). Everything else takes
 * a `Clock` and a random source as parameters.
 */
import { randomBytes } from 'node:crypto';
import { createRandom } from './random.js';
import type { Clock, RandomSource } from './types.js';

/**
 * Node's timers hold at most 2³¹ − 1 ms; a longer delay fires after about 1 ms (with a warning).
 * Longer waits are chained in steps of this size, so any finite duration waits as long as asked.
 */
export const MAX_TIMER_STEP_MS = 2 ** 31 - 1;

/**
 * Calls `fn` once after `ms` (any finite duration; `Infinity` never fires), returning a cancel
 * function. Background timers do not keep the process alive.
 */
export function setLongTimer(fn: () => void, ms: number, background = false): () => void {
  if (ms === Number.POSITIVE_INFINITY) return noop;
  let remaining = Math.max(ms, 0);
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const step = Math.min(remaining, MAX_TIMER_STEP_MS);
    remaining -= step;
    timer = setTimeout(remaining > 0 ? arm : fn, step);
    if (background) timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/** The real clock: `performance.now()` and Node timers (background timers are unref'd). */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer(fn, ms, background) {
    if (ms <= MAX_TIMER_STEP_MS) {
      const timer = setTimeout(fn, ms);
      if (background === true) timer.unref();
      return () => clearTimeout(timer);
    }
    return setLongTimer(fn, ms, background === true);
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

function noop(): void {}
