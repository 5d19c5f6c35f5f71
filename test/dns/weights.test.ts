import { describe, expect, it } from 'vitest';
import { DNS_WEIGHT_TOTAL } from '../../src/dns/index.js';
import { scaleWeights } from '../../src/dns/weights.js';

const records = (weights: number[]) => weights.map((dnsWeight) => ({ dnsWeight, weight: 0 }));

describe('scaleWeights', () => {
  it('keeps weights that sum to at most DNS_WEIGHT_TOTAL as DNS gave them', () => {
    const rs = records([10, 5, 0.1]);
    scaleWeights(rs);
    expect(rs.map((r) => r.weight)).toEqual([10, 5, 0.1]);
    const full = records(Array.from({ length: DNS_WEIGHT_TOTAL }, () => 1));
    scaleWeights(full);
    expect(full.every((r) => r.weight === 1)).toBe(true);
  });

  it('scales larger sums down to DNS_WEIGHT_TOTAL, every ratio kept', () => {
    const weights = [65_535, 1, 1_310_700, 0.01, 300];
    const rs = records(weights);
    scaleWeights(rs);
    expect(rs.reduce((sum, r) => sum + r.weight, 0)).toBeCloseTo(DNS_WEIGHT_TOTAL, 9);
    for (let i = 1; i < weights.length; i++) {
      expect(rs[i]!.weight / rs[0]!.weight).toBeCloseTo(weights[i]! / weights[0]!, 12);
      expect(rs[i]!.weight).toBeGreaterThan(0);
    }
    // An answer of 4 000 addresses (A records, weight 1 each): a quarter each.
    const many = records(Array.from({ length: 4_000 }, () => 1));
    scaleWeights(many);
    expect(many.every((r) => r.weight === 0.25)).toBe(true);
  });
});
