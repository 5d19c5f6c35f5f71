import { describe, expect, it } from 'vitest';
import { FAILURE_WEIGHT, FailureRate, MAX_FAILURE_RATE } from '../../src/load/failures.js';

describe('FailureRate (failure accrual as load)', () => {
  it('rises by a quarter of what is left per failure and falls by a quarter per success (exact)', () => {
    const rate = new FailureRate(10_000);
    expect(rate.factorAt(0)).toBe(1);
    rate.record(true, 0);
    expect(rate.valueAt(0)).toBe(FAILURE_WEIGHT);
    rate.record(true, 0);
    expect(rate.valueAt(0)).toBeCloseTo(1 - (1 - FAILURE_WEIGHT) ** 2, 12);
    rate.record(false, 0);
    expect(rate.valueAt(0)).toBeCloseTo((1 - (1 - FAILURE_WEIGHT) ** 2) * (1 - FAILURE_WEIGHT), 12);
    expect(rate.factorAt(0)).toBeCloseTo(1 / (1 - rate.valueAt(0)), 12);
  });

  it('a shard that keeps failing costs at most 100× (the rate is capped at 0.99)', () => {
    const rate = new FailureRate(10_000);
    for (let i = 0; i < 100; i++) rate.record(true, i);
    expect(rate.valueAt(100)).toBeLessThanOrEqual(MAX_FAILURE_RATE);
    expect(rate.factorAt(100)).toBeCloseTo(100, 6);
  });

  it('decays with time since the last outcome, like the latency estimate (e^−Δt/τ)', () => {
    const rate = new FailureRate(10_000);
    rate.record(true, 0);
    rate.record(true, 0);
    const p = rate.valueAt(0);
    expect(rate.valueAt(10_000)).toBeCloseTo(p * Math.exp(-1), 9);
    expect(rate.valueAt(100_000)).toBeLessThan(1e-4);
    // A new outcome starts from the decayed rate.
    rate.record(false, 10_000);
    expect(rate.valueAt(10_000)).toBeCloseTo(p * Math.exp(-1) * (1 - FAILURE_WEIGHT), 9);
  });
});
