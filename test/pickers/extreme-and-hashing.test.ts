import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../src/pickers/hashing/index.js';
import {
  leastInFlight,
  p2c,
  peakEwma,
  random,
  roundRobin,
  weightedRoundRobin,
} from '../../src/pickers/index.js';
import {
  constant,
  pickerConformance,
  remapFraction,
  seededRandom,
  shardViews,
  simulate,
} from '../../src/testing/index.js';

describe('pickers on extreme inputs', () => {
  const all = {
    roundRobin,
    weightedRoundRobin,
    random,
    p2c: () => p2c(),
    p2c3: () => p2c({ choices: 3 }),
    p2cEwma: () => p2c({ load: 'ewma' }),
    p2cBytes: () => p2c({ load: 'bytes' }),
    leastInFlight,
    peakEwma: () => peakEwma(),
    maglev: () => consistentHash({ algorithm: 'maglev' }),
    rendezvous: () => consistentHash({ algorithm: 'rendezvous' }),
    maglevB: () => consistentHash({ algorithm: 'maglev', boundedLoad: 1.25 }),
    rendezvousB: () => consistentHash({ algorithm: 'rendezvous', boundedLoad: 1.25 }),
  };
  for (const [name, f] of Object.entries(all)) {
    it(`${name}: weights 1e-9 and 1e9 and duplicates, subsets`, () => {
      const views = shardViews([
        { id: 'a', weight: 1e-9, inFlight: 3 },
        { id: 'b', weight: 1e9, inFlight: 0 },
        { id: 'c', weight: 1, inFlight: 2 },
        { id: 'd', weight: 1, inFlight: 2 },
      ]);
      const p = f();
      p.rebuild?.(views);
      const rnd = seededRandom(3);
      for (let i = 0; i < 500; i++) {
        const subset = views.filter((_, k) => ((i >> k) & 1) === 1 || k === i % 4);
        const got = p.pick(subset, { key: `k${i}`, attempt: 1, random: rnd, totalInFlight: 7 });
        expect(subset).toContain(got);
      }
    });
  }
  it('ring refuses weight 1e9 with a ConfigError at rebuild (documented bound)', () => {
    const p = consistentHash({ algorithm: 'ring' });
    expect(() =>
      p.rebuild(
        shardViews([
          { id: 'a', weight: 1e-9 },
          { id: 'b', weight: 1e9 },
        ]),
      ),
    ).toThrow(/too large for the ring/);
  });
  it('jump conformance with equal weights', () => {
    expect(() =>
      pickerConformance(() => consistentHash({ algorithm: 'jump' }), { equalWeights: true }),
    ).not.toThrow();
  });
});

describe('consistent hash properties', () => {
  it('home() agrees with pick() on every offered subset (no bound)', () => {
    for (const algorithm of ['ring', 'maglev', 'rendezvous', 'jump'] as const) {
      const p = consistentHash({ algorithm, affinity: 'spill' });
      const views = shardViews(Array.from({ length: 7 }, (_, i) => `s${i}`));
      p.rebuild(views);
      for (let i = 0; i < 2000; i++) {
        const subset = views.filter((_, k) => ((i * 2654435761) >>> k) & 1);
        if (subset.length === 0) continue;
        const key = `key-${i}`;
        const a = p.home(subset, key);
        const b = p.pick(subset, { key, attempt: 1, random: seededRandom(1), totalInFlight: 0 });
        expect(b?.id, `${algorithm} ${key}`).toBe(a?.id);
      }
    }
  });
  it('remap ≈ 1/n on join for ring/maglev/rendezvous', () => {
    const before = Array.from({ length: 10 }, (_, i) => `s${i}`);
    const after = [...before, 's10'];
    for (const algorithm of ['ring', 'maglev', 'rendezvous', 'jump'] as const) {
      const moved = remapFraction({
        picker: consistentHash({ algorithm }),
        before,
        after,
        keys: 20000,
      });
      expect(moved, algorithm).toBeLessThan(0.15);
      expect(moved, algorithm).toBeGreaterThan(0.05);
    }
  });
  it('maglev keeps table size across membership changes and describe reports it', () => {
    const p = consistentHash({ algorithm: 'maglev' });
    p.rebuild(shardViews(['a', 'b', 'c']));
    const t0 = p.describe().tableSize;
    p.rebuild(shardViews(Array.from({ length: 700 }, (_, i) => `s${i}`)));
    expect(p.describe().tableSize).toBe(t0);
    p.rebuild(shardViews([]));
    expect(p.describe().tableSize).toBe(t0);
    p.rebuild(shardViews(['a']));
    expect(p.describe().tableSize).toBe(t0);
  });
  it('describe shares sum to 1', () => {
    for (const algorithm of ['ring', 'maglev', 'rendezvous', 'jump'] as const) {
      const p = consistentHash({ algorithm });
      p.rebuild(shardViews(['a', 'b', 'c', 'd', 'e']));
      const s = p.describe().shards.reduce((x, y) => x + y.share, 0);
      expect(s, algorithm).toBeCloseTo(1, 9);
    }
  });
});

describe('simulate figures', () => {
  it('constant latency gives exact percentiles and imbalance', async () => {
    const r = await simulate({
      picker: roundRobin(),
      shards: [
        { id: 'a', latency: constant(7) },
        { id: 'b', latency: constant(7) },
      ],
      concurrency: 2,
      requests: 10,
      seed: 1,
    });
    expect(r.latency).toMatchObject({ mean: 7, p50: 7, p90: 7, p99: 7, p999: 7 });
    expect(r.imbalance).toBe(1);
    expect(r.perShard.map((s) => s.requests)).toEqual([5, 5]);
  });
  it('all shards down forever with retries settles (no hang)', async () => {
    const r = await simulate({
      picker: p2c(),
      shards: [
        { id: 'a', latency: 1, schedule: [{ atMs: 0, down: true }] },
        { id: 'b', latency: 1, schedule: [{ atMs: 0, down: true }] },
      ],
      concurrency: 2,
      requests: 50,
      seed: 1,
    });
    expect(r.failures).toBe(50);
  });
  it('a schedule change at t applies to services starting at t', async () => {
    const r = await simulate({
      picker: roundRobin(),
      shards: [{ id: 'a', latency: 10, schedule: [{ atMs: 30, latency: 100 }] }],
      concurrency: 1,
      requests: 5,
      seed: 1,
      latencies: 'sorted',
    });
    // runs at 0,10,20 take 10; run at 30 takes 100 and run at 130 takes 100
    expect(Array.from(r.latency.sorted!)).toEqual([10, 10, 10, 100, 100]);
  });
});
