/**
 * The simulator's load: when runs arrive (a Poisson process for an open loop; a closed loop needs
 * no schedule, each caller starting its next run when its last one settles) and which routing key
 * each carries (uniform or Zipf over `key-0` … `key-(count−1)`).
 */
import type { RandomSource } from '../base/types.js';
import type { ManualClock } from './manual-clock.js';

/** Requests arriving on their own, whatever the balancer's state (open loop). */
export interface Arrivals {
  /** Mean requests per virtual second; inter-arrival times are exponential (a Poisson process). */
  rate: number;
}

/** The routing keys runs carry (for hashing pickers): `key-0` … `key-(count−1)`. */
export interface KeySpec {
  /** How many distinct keys (at most 10 000 000). */
  count: number;
  /** `'uniform'` (default) or `'zipf'` (key k drawn with weight 1 / (k+1)^s: a few hot keys). */
  distribution?: 'uniform' | 'zipf';
  /** Zipf exponent (default 1). */
  s?: number;
}

/**
 * Calls `arrive` at the times of a Poisson process of `rate` per virtual second (exponential gaps
 * by inverse transform), the first after one gap, until `arrive` returns false.
 */
export function poissonArrivals(
  clock: ManualClock,
  rate: number,
  random: RandomSource,
  arrive: () => boolean,
): void {
  const meanGapMs = 1000 / rate;
  const gap = () => -meanGapMs * Math.log(1 - random());
  // Arrival times are summed on their own scale, not read back from the clock, so they do not
  // drift with the clock's rounding.
  let nextAt = gap();
  const next = (): void => {
    if (!arrive()) return;
    nextAt += gap();
    clock.setTimer(next, nextAt - clock.now());
  };
  clock.setTimer(next, nextAt);
}

/** Draws the key of each run from `spec` (undefined: runs carry no key). */
export function keyGenerator(
  spec: KeySpec | undefined,
  random: RandomSource,
): (() => string) | undefined {
  if (spec === undefined) return undefined;
  const count = spec.count;
  const names: string[] = [];
  const name = (k: number): string => {
    let key = names[k];
    if (key === undefined) {
      key = `key-${k}`;
      names[k] = key;
    }
    return key;
  };
  if ((spec.distribution ?? 'uniform') === 'uniform') return () => name((random() * count) | 0);
  const s = spec.s ?? 1;
  const cdf = new Float64Array(count);
  let acc = 0;
  for (let k = 0; k < count; k++) {
    acc += 1 / (k + 1) ** s;
    cdf[k] = acc;
  }
  return () => {
    const point = random() * acc;
    let lo = 0;
    let hi = count - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! > point) hi = mid;
      else lo = mid + 1;
    }
    return name(lo);
  };
}
