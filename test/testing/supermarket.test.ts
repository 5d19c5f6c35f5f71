/**
 * examples/supermarket.ts, small: the simulator reproduces Mitzenmacher's supermarket model (100
 * servers, d = 1 and d = 2) within a tolerance of the formula at λ ≤ 0.9, on virtual time and
 * deterministic by seed.
 *
 * The tolerances are statistical, not fitted to one seed: over seeds 1–10 at these sizes the
 * relative error of the mean sojourn had a standard deviation of about 2.1 %, 3.0 % and 5.8 %
 * (d = 1; λ = 0.5, 0.7, 0.9) and 0.9 %, 1.5 % and 2.7 % (d = 2), the same for the queue length. Each
 * tolerance is about three of those. Near λ = 1 a queue's length wanders for a long time (an M/M/1
 * queue forgets its start after ~1/(1 − √λ)² service times), hence the larger runs there.
 */
import { describe, expect, it } from 'vitest';
import { expectedSojourn, supermarket } from '../../examples/supermarket.js';

const POINTS = [
  { d: 1, lambda: 0.5, requests: 20_000, warmupUnits: 50, tolerance: 0.07 },
  { d: 1, lambda: 0.7, requests: 20_000, warmupUnits: 100, tolerance: 0.1 },
  { d: 1, lambda: 0.9, requests: 60_000, warmupUnits: 300, tolerance: 0.18 },
  { d: 2, lambda: 0.5, requests: 20_000, warmupUnits: 50, tolerance: 0.03 },
  { d: 2, lambda: 0.7, requests: 20_000, warmupUnits: 50, tolerance: 0.05 },
  { d: 2, lambda: 0.9, requests: 40_000, warmupUnits: 100, tolerance: 0.09 },
] as const;

describe('the supermarket model (Mitzenmacher 2001)', () => {
  it('has the formula right: M/M/1 for d = 1, Σ λ^((dⁱ − d)/(d − 1)) for d = 2', () => {
    expect(expectedSojourn(1, 0.9)).toBeCloseTo(10, 12);
    // 1 + λ² + λ⁶ + λ¹⁴ + λ³⁰ + … (exponents 2ⁱ − 2)
    const l = 0.9;
    let sum = 0;
    for (let i = 1; i <= 10; i++) sum += l ** (2 ** i - 2);
    expect(expectedSojourn(2, l)).toBeCloseTo(sum, 10);
    expect(expectedSojourn(2, 0.5)).toBeCloseTo(1.2657, 4);
  });

  it('simulated sojourn and queue length match the formula at λ ≤ 0.9, seeded', {
    timeout: 180_000,
  }, async () => {
    const sojourn: Record<string, number> = {};
    for (const { tolerance, ...point } of POINTS) {
      const p = await supermarket({ ...point, seed: 1 });
      expect(p.warmup).toBeGreaterThan(0);
      const where = `d = ${p.d}, λ = ${p.lambda}`;
      expect(Math.abs(p.simulatedSojourn / p.sojourn - 1), `sojourn, ${where}`).toBeLessThan(
        tolerance,
      );
      expect(Math.abs(p.simulatedQueue / p.queue - 1), `queue, ${where}`).toBeLessThan(tolerance);
      sojourn[`${p.d}:${p.lambda}`] = p.simulatedSojourn;
    }
    // The paper's point: a second choice cuts the time in the system, more as λ → 1.
    expect(sojourn['1:0.9']! / sojourn['2:0.9']!).toBeGreaterThan(3);
    expect(sojourn['1:0.5']! / sojourn['2:0.5']!).toBeGreaterThan(1.4);
  });

  it('is deterministic: the same seed gives the same figures', async () => {
    const point = { d: 2, lambda: 0.7, requests: 3_000, warmupUnits: 20, seed: 5 } as const;
    expect(await supermarket(point)).toEqual(await supermarket(point));
  });
});
