import { describe, expect, it } from 'vitest';
import { p2c, roundRobin } from '../../src/index.js';
import { constant, exponential, shardViews, simulate } from '../../src/testing/index.js';

describe('shardViews output as plain frozen ShardStates', () => {
  it('structuredClone of a view works', () => {
    const [a] = shardViews([{ id: 'a', labels: { zone: 'x' }, inFlight: 2 }]);
    // src/testing/shard-views.ts header: "Plain, frozen `ShardState` objects"; docs/reference.md: "builds frozen ShardStates"
    expect(structuredClone(a)).toEqual({ ...a, labels: { zone: 'x' } });
  });
  it('structuredClone of a spread copy works (labels included)', () => {
    const [a] = shardViews([{ id: 'a', labels: { zone: 'x' } }]);
    expect(() => structuredClone({ ...a })).not.toThrow();
  });
  it('Object.freeze on an already-frozen view is a no-op, not a throw', () => {
    const [a] = shardViews([{ id: 'a', labels: { zone: 'x' } }]);
    expect(Object.isFrozen(a)).toBe(true);
    expect(() => Object.freeze(a)).not.toThrow();
    expect(() => Object.freeze(a!.labels)).not.toThrow();
  });
  it('spread, JSON, keys, toEqual still work', () => {
    const [a] = shardViews([{ id: 'a', labels: { zone: 'x' }, inFlight: 2 }]);
    expect(Object.keys(a!)).toContain('labels');
    expect(JSON.parse(JSON.stringify(a))).toMatchObject({
      id: 'a',
      labels: { zone: 'x' },
      inFlight: 2,
    });
    expect(a).toEqual({ ...a });
  });
});

describe('simulate determinism with and without warm-up', () => {
  const shards = Array.from({ length: 4 }, (_, i) => ({
    id: `s${i}`,
    latency: exponential(i === 0 ? 30 : 5),
    capacity: 2,
  }));
  for (const warm of [{}, { warmupRequests: 200 }, { warmupMs: 100 }]) {
    it(`same seed same result ${JSON.stringify(warm)}`, async () => {
      const one = async () =>
        simulate({
          picker: p2c(),
          shards,
          arrivals: { rate: 500 },
          requests: 1_000,
          seed: 7,
          ...warm,
        });
      const a = await one();
      const b = await one();
      expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    });
  }
  it('closed loop with retries after warm-up', async () => {
    const sh = [
      { id: 'a', latency: constant(5), failureRate: 0.3 },
      { id: 'b', latency: constant(7) },
    ];
    const one = async () =>
      simulate({
        picker: roundRobin(),
        shards: sh,
        concurrency: 4,
        requests: 500,
        warmupRequests: 50,
        seed: 3,
        balancerOptions: {
          retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
          health: false,
        },
      });
    const a = await one();
    const b = await one();
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(a.latency.histogram.counts.reduce((x: number, y: number) => x + y, 0)).toBe(500);
  });
});
