/**
 * `shardViews` from `shardwise/testing`: frozen shards with the load a test sets, so a picker can
 * be called directly, without a balancer.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { leastInFlight, p2c, peakEwma } from '../../src/pickers/index.js';
import { seededRandom, shardViews } from '../../src/testing/index.js';

const request = (seed: number) => ({ attempt: 1, random: seededRandom(seed), totalInFlight: 0 });

describe('shardViews', () => {
  it('builds idle shards from ids, in membership order', () => {
    const views = shardViews(['a', 'b']);
    expect(views.map((v) => [v.id, v.index, v.target, v.weight, v.inFlight, v.load])).toEqual([
      ['a', 0, 'a', 1, 0, 0],
      ['b', 1, 'b', 1, 0, 0],
    ]);
    expect(views[0]!.rttMs).toBe(30);
    expect(views[0]!.cost).toBe(30);
    expect(views[0]!.limit).toBe(32);
  });

  it('derives load and cost from the figures set, as the balancer does', () => {
    const [shard] = shardViews([{ id: 'a', inFlight: 3, rttMs: 20, reportedLoad: 2, weight: 2 }]);
    expect(shard!.load).toBe(5);
    expect(shard!.cost).toBe(20 * (3 + 1 + 2));
    expect(shard!.reportedLoad).toBe(2);
    expect(shard!.weight).toBe(2);
    const [pushing] = shardViews([{ id: 'p', inFlight: 1, load: 1e9, cost: 1e9 }]);
    expect(pushing!.load).toBe(1e9);
    expect(pushing!.cost).toBe(1e9);
  });

  it('drives pickers with the load the test sets', () => {
    const views = shardViews([
      { id: 'busy', inFlight: 9 },
      { id: 'idle', inFlight: 1 },
    ]);
    // Two shards: P2C always draws both, and keeps the less loaded, whatever the seed.
    for (let seed = 1; seed <= 20; seed++)
      expect(p2c().pick(views, request(seed))!.id).toBe('idle');
    const fleet = shardViews([
      { id: 'a', inFlight: 4 },
      { id: 'b', inFlight: 2 },
      { id: 'c', inFlight: 3 },
    ]);
    expect(leastInFlight().pick(fleet, request(1))!.id).toBe('b');
    const slow = shardViews([
      { id: 'slow', rttMs: 200 },
      { id: 'fast', rttMs: 10, inFlight: 3 },
    ]);
    // Peak EWMA compares rtt × (inFlight + 1): 200 against 40.
    expect(peakEwma().pick(slow, request(3))!.id).toBe('fast');
  });

  it('is frozen: a picker that writes to a shard throws', () => {
    const [shard] = shardViews(['a']);
    expect(() => {
      (shard as { inFlight: number }).inFlight = 5;
    }).toThrow(TypeError);
    expect(Object.isFrozen(shardViews(['a']))).toBe(true);
  });

  it.each([
    [[{ id: '' }], 'shards[0].id'],
    [['a', 'a'], 'shards[1].id'],
    [[{ id: 'a', inFlight: -1 }], 'shards[0].inFlight'],
    [[{ id: 'a', rttMs: Number.NaN }], 'shards[0].rttMs'],
    [[{ id: 'a', weight: 0 }], 'shards[0].weight'],
    [[{ id: 'a', inflight: 2 }], 'shards[0].inflight'],
  ])('rejects %j with a ConfigError naming %s', (shards, field) => {
    let error: unknown;
    try {
      shardViews(shards as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
  });
});
