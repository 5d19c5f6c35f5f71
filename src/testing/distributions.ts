/**
 * Latency distributions for simulated shards. Each draws from the uniform source it is handed, so
 * a seeded source gives the same samples in any process (STYLE rule 2: no hidden randomness).
 */
import { ConfigError } from '../base/errors.js';
import type { RandomSource } from '../base/types.js';

/**
 * A distribution of service times, in virtual ms.
 *
 * @example
 * const slow = lognormal(20, 0.5);
 * const ms = slow.sample(seededRandom(1));
 */
export interface Distribution {
  /** Short description, e.g. `lognormal(20, 0.5)`. */
  readonly name: string;
  /** The theoretical mean in ms, when finite. */
  readonly mean?: number;
  /** One sample (≥ 0), drawn from `random` (uniform in [0, 1)). */
  sample(random: RandomSource): number;
}

function positive(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigError(field, 'must be a positive finite number', value);
  }
  return value;
}

/** A uniform in (0, 1]: never 0, so its logarithm is finite. */
function open(random: RandomSource): number {
  return 1 - random();
}

/**
 * Always `ms`.
 *
 * @example
 * simulate({ shards: [{ id: 'a', latency: constant(10) }], requests: 100, seed: 1 });
 */
export function constant(ms: number): Distribution {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new ConfigError('ms', 'must be a finite number ≥ 0', ms);
  }
  return { name: `constant(${ms})`, mean: ms, sample: () => ms };
}

/**
 * Exponential with mean `meanMs` (memoryless service, as in an M/M/c queue); inverse transform.
 *
 * @example
 * exponential(10).sample(seededRandom(7));
 */
export function exponential(meanMs: number): Distribution {
  positive('meanMs', meanMs);
  return {
    name: `exponential(${meanMs})`,
    mean: meanMs,
    sample: (random) => -meanMs * Math.log(open(random)),
  };
}

/**
 * Log-normal with median `medianMs` and shape `sigma` (the standard deviation of the log): the
 * usual shape of real RPC latencies, a long right tail. Normal deviates by Box–Muller (one per
 * sample, two uniforms, so the stream position per sample is fixed).
 *
 * @example
 * lognormal(20, 0.5); // median 20 ms, mean ≈ 22.7 ms
 */
export function lognormal(medianMs: number, sigma: number): Distribution {
  positive('medianMs', medianMs);
  if (typeof sigma !== 'number' || !Number.isFinite(sigma) || sigma < 0) {
    throw new ConfigError('sigma', 'must be a finite number ≥ 0', sigma);
  }
  const mu = Math.log(medianMs);
  return {
    name: `lognormal(${medianMs}, ${sigma})`,
    mean: Math.exp(mu + (sigma * sigma) / 2),
    sample(random) {
      const u = open(random);
      const v = random();
      const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
      return Math.exp(mu + sigma * z);
    },
  };
}

/**
 * Pareto (type I) with minimum `scaleMs` and tail index `alpha`: heavy tails, for stragglers. The
 * mean `alpha × scale / (alpha − 1)` exists only for alpha > 1 (`mean` is undefined otherwise).
 *
 * @example
 * pareto(5, 2.5); // never below 5 ms, mean ≈ 8.33 ms
 */
export function pareto(scaleMs: number, alpha: number): Distribution {
  positive('scaleMs', scaleMs);
  positive('alpha', alpha);
  const base = {
    name: `pareto(${scaleMs}, ${alpha})`,
    sample: (random: RandomSource) => scaleMs / open(random) ** (1 / alpha),
  };
  return alpha > 1 ? { ...base, mean: (alpha * scaleMs) / (alpha - 1) } : base;
}

/** True for objects shaped like a {@link Distribution}. */
export function isDistribution(value: unknown): value is Distribution {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Distribution).sample === 'function' &&
    typeof (value as Distribution).name === 'string'
  );
}
