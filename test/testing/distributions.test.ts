import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import {
  constant,
  type Distribution,
  exponential,
  lognormal,
  pareto,
  seededRandom,
} from '../../src/testing/index.js';

const N = 100_000;

function draw(distribution: Distribution, seed: number): Float64Array {
  const random = seededRandom(seed);
  const out = new Float64Array(N);
  for (let i = 0; i < N; i++) out[i] = distribution.sample(random);
  return out;
}

function mean(values: Float64Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

function median(values: Float64Array): number {
  const sorted = Float64Array.from(values).sort();
  return sorted[sorted.length >> 1]!;
}

describe('distributions', () => {
  it('constant always gives its value', () => {
    const d = constant(7);
    expect(d.mean).toBe(7);
    expect(d.name).toBe('constant(7)');
    expect(draw(d, 1).every((v) => v === 7)).toBe(true);
  });

  it('exponential has the given mean (±1 % over 100k seeded samples)', () => {
    const d = exponential(20);
    const samples = draw(d, 1);
    expect(d.mean).toBe(20);
    // σ of the sample mean is 20 / √100k ≈ 0.063, so 1 % (0.2) is > 3σ.
    expect(Math.abs(mean(samples) - 20)).toBeLessThan(0.2);
    expect(samples.every((v) => v >= 0 && Number.isFinite(v))).toBe(true);
  });

  it('lognormal has the given median and mean exp(μ + σ²/2) (±1 %, ±2 %)', () => {
    const d = lognormal(20, 0.5);
    const samples = draw(d, 2);
    expect(Math.abs(median(samples) - 20) / 20).toBeLessThan(0.01);
    const expected = 20 * Math.exp(0.125);
    expect(d.mean).toBeCloseTo(expected, 10);
    expect(Math.abs(mean(samples) - expected) / expected).toBeLessThan(0.02);
  });

  it('pareto never goes below its scale, and has mean αx/(α−1) for α > 1 (±1 %)', () => {
    const d = pareto(5, 3);
    const samples = draw(d, 3);
    expect(samples.every((v) => v >= 5)).toBe(true);
    expect(d.mean).toBeCloseTo(7.5, 10);
    // Variance 0.75 × 25 → σ of the mean ≈ 0.014; 1 % of 7.5 is 0.075.
    expect(Math.abs(mean(samples) - 7.5) / 7.5).toBeLessThan(0.01);
    expect(pareto(5, 1).mean).toBeUndefined();
  });

  it('is reproducible: the same seed gives the same samples', () => {
    const a = draw(lognormal(10, 1), 42).slice(0, 100);
    const b = draw(lognormal(10, 1), 42).slice(0, 100);
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it.each([
    [() => constant(-1), 'ms'],
    [() => constant(Number.NaN), 'ms'],
    [() => exponential(0), 'meanMs'],
    [() => exponential(Number.POSITIVE_INFINITY), 'meanMs'],
    [() => lognormal(0, 1), 'medianMs'],
    [() => lognormal(10, -0.1), 'sigma'],
    [() => pareto(0, 2), 'scaleMs'],
    [() => pareto(1, 0), 'alpha'],
    [() => pareto(1, '2' as unknown as number), 'alpha'],
  ])('rejects bad parameters with a ConfigError naming the field (%#)', (make, field) => {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
    expect((error as Error).message).toContain(`\`${field}\``);
  });
});
