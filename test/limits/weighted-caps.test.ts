/**
 * Weights mean capacity: a fixed per-shard cap is the cap of a shard of mean weight, and each
 * shard's cap is `max(1, round(cap × weight / mean weight))`. At saturation every shard is full,
 * so each completes work in proportion to its cap, whatever the picker — before the caps scaled,
 * weights 2/1/1/1 at 64 callers and a cap of 16 gave every picker an equal quarter each.
 */
import { describe, expect, it } from 'vitest';
import type { Picker } from '../../src/base/types.js';
import { Balancer } from '../../src/core/balancer.js';
import { aimd, fixed } from '../../src/limits/index.js';
import { leastInFlight, p2c, peakEwma, roundRobin } from '../../src/pickers/index.js';
import { simulate } from '../../src/testing/index.js';
import { makeBalancer, resolveAfter, tick } from '../helpers.js';

const WEIGHTS = [2, 1, 1, 1];
const CAP = 16;

const pickers: [string, () => Picker][] = [
  ['p2c', () => p2c()],
  ['peakEwma', () => peakEwma()],
  ['roundRobin', () => roundRobin()],
  ['leastInFlight', () => leastInFlight()],
];

describe('weighted caps at saturation (simulator, virtual time)', () => {
  for (const [name, picker] of pickers) {
    it(`${name}: weights 2/1/1/1 take 2/5, 1/5, 1/5, 1/5 of the work`, async () => {
      const result = await simulate({
        picker,
        balancerOptions: { maxInFlightPerShard: CAP },
        // Each shard serves anything it is given in 10 ms: the caps alone decide the shares.
        shards: WEIGHTS.map((weight, i) => ({ id: `s${i}`, weight, latency: 10 })),
        concurrency: 128, // more callers than the 65 slots in all: always saturated
        requests: 20_000,
        warmupRequests: 1_000,
        seed: 11,
      });
      const total = result.perShard.reduce((sum, s) => sum + s.requests, 0);
      const expected = WEIGHTS.map((w) => w / 5);
      result.perShard.forEach((s, i) => {
        const share = s.requests / total;
        expect(Math.abs(share - expected[i]!) / expected[i]!).toBeLessThan(0.1);
      });
      // Each shard was full at its own cap: 26 for the weight-2 shard, 13 for the others.
      expect(result.perShard.map((s) => s.maxInFlight)).toEqual([26, 13, 13, 13]);
    });
  }
});

describe('weighted caps in stats() and across membership changes', () => {
  const shardsOf = (weights: number[]) =>
    weights.map((weight, i) => ({ id: `s${i}`, target: `t${i}`, weight }));
  const limits = (b: Balancer<string>) => b.stats().shards.map((s) => s.limit);

  it('equal weights keep the cap exactly as given, whatever the weight', () => {
    for (const w of [1, 0.1, 3, 1e6]) {
      const b = new Balancer<string>({ shards: shardsOf([w, w, w]), maxInFlightPerShard: 7 });
      expect(limits(b)).toEqual([7, 7, 7]);
    }
    const b = new Balancer<string>({ shards: shardsOf([1, 1]) });
    expect(limits(b)).toEqual([32, 32]); // the default cap
  });

  it('stats() shows each effective cap: max(1, round(cap × weight / mean weight))', () => {
    const b = new Balancer<string>({ shards: shardsOf([2, 1, 1, 1]), maxInFlightPerShard: 16 });
    expect(limits(b)).toEqual([26, 13, 13, 13]);
    // A very light shard keeps one slot.
    const light = new Balancer<string>({ shards: shardsOf([1_000, 1]), maxInFlightPerShard: 4 });
    expect(limits(light)).toEqual([8, 1]);
    // fixed(n) is the number n, scaled the same way.
    const f = new Balancer<string>({
      shards: shardsOf([2, 1, 1, 1]),
      maxInFlightPerShard: fixed(16),
    });
    expect(limits(f)).toEqual([26, 13, 13, 13]);
    // An infinite cap stays infinite.
    const open = new Balancer<string>({
      shards: shardsOf([2, 1]),
      maxInFlightPerShard: Number.POSITIVE_INFINITY,
    });
    expect(limits(open)).toEqual([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY]);
  });

  it('caps follow setShards, addShard and removeShard', async () => {
    const b = new Balancer<string>({ shards: shardsOf([1, 1]), maxInFlightPerShard: 10 });
    expect(limits(b)).toEqual([10, 10]);
    await b.setShards(shardsOf([3, 1]));
    expect(limits(b)).toEqual([15, 5]);
    b.addShard({ id: 'x', target: 'tx', weight: 2 });
    expect(limits(b)).toEqual([15, 5, 10]);
    await b.removeShard('s0');
    expect(limits(b)).toEqual([7, 13]); // mean 1.5: round(6.67), round(13.33)
    await b.setShards(shardsOf([1, 1]));
    expect(limits(b)).toEqual([10, 10]);
  });

  it('a raised cap lets queued runs start at once; a lowered one takes no new work until below it', async () => {
    const { clock, balancer: b } = makeBalancer({
      shards: shardsOf([1, 1]),
      maxInFlightPerShard: 2,
    });
    const runs = Array.from({ length: 6 }, () => b.run(() => resolveAfter(clock, 10, 1)));
    expect(b.stats().inFlight).toBe(4);
    expect(b.stats().queued).toBe(2);
    // s0 weighs 3 now: caps 3 and 1. s0 takes one queued run; s1 holds 2 over its new cap.
    await b.setShards(shardsOf([3, 1]));
    expect(limits(b)).toEqual([3, 1]);
    expect(b.stats().shards.map((s) => s.inFlight)).toEqual([3, 2]);
    expect(b.stats().queued).toBe(1);
    await tick(clock, 10);
    // The first six ended or started; s1 took nothing while at or over its cap of 1.
    expect(b.stats().shards.map((s) => s.inFlight)).toEqual([1, 0]);
    await tick(clock, 10);
    expect(await Promise.all(runs)).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('adaptive limits are not scaled: each learns its own shard', () => {
    const b = new Balancer<string>({
      shards: shardsOf([2, 1, 1, 1]),
      maxInFlightPerShard: aimd({ initial: 8 }),
    });
    expect(limits(b)).toEqual([8, 8, 8, 8]);
  });
});
