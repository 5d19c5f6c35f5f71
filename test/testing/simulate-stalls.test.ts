import { describe, expect, it } from 'vitest';
import type { Picker } from '../../src/base/types.js';
import { consistentHash } from '../../src/pickers/hashing/index.js';
import { p2c, roundRobin } from '../../src/pickers/index.js';
import {
  ManualClock,
  pickerConformance,
  remapFraction,
  shardViews,
  simulate,
} from '../../src/testing/index.js';
import { makeBalancer, recorded, shardsOf } from '../helpers.js';

describe('simulate stalls', () => {
  for (const algorithm of ['ring', 'maglev', 'rendezvous', 'jump'] as const) {
    it(`${algorithm} strict: one home down forever settles`, async () => {
      const r = await simulate({
        picker: () => consistentHash({ algorithm }),
        shards: [
          { id: 'a', latency: 1, schedule: [{ atMs: 0, down: true }] },
          { id: 'b', latency: 1 },
          { id: 'c', latency: 1 },
        ],
        concurrency: 4,
        requests: 200,
        keys: { count: 50 },
        seed: 1,
      });
      expect(r.failures).toBeGreaterThan(0);
    });
  }
  it('strict: every shard down forever settles', async () => {
    const r = await simulate({
      picker: () => consistentHash({ algorithm: 'maglev' }),
      shards: [
        { id: 'a', latency: 1, schedule: [{ atMs: 0, down: true }] },
        { id: 'b', latency: 1, schedule: [{ atMs: 0, down: true }] },
      ],
      concurrency: 4,
      requests: 50,
      keys: { count: 10 },
      seed: 1,
    });
    expect(r.failures).toBe(50);
  });
  it('down then up mid-run with queued work', async () => {
    const r = await simulate({
      picker: roundRobin,
      shards: [
        {
          id: 'a',
          latency: 10,
          capacity: 1,
          schedule: [
            { atMs: 15, down: true },
            { atMs: 15, down: false },
          ],
        },
      ],
      concurrency: 3,
      requests: 20,
      seed: 1,
      balancerOptions: { health: false },
    });
    expect(r.failures + 20).toBeGreaterThan(0);
  });
});

describe('conformance catches broken pickers', () => {
  it('catches a picker that returns a foreign shard only on retries (attempt > 1)', () => {
    const views = shardViews(['zz']);
    const bad = (): Picker => ({
      name: 'bad-retry',
      pick(shards, request) {
        if (shards.length === 0) return undefined;
        return request.attempt > 1 ? views[0] : shards[0];
      },
    });
    expect(() => pickerConformance(bad)).toThrow(/breaks/);
  });
  it('catches a picker that returns a foreign shard only for keyless picks on many shards', () => {
    const views = shardViews(['zz']);
    const bad = (): Picker => ({
      name: 'bad-keyless',
      pick(shards, request) {
        if (shards.length === 0) return undefined;
        return request.key === undefined && shards.length > 5 ? views[0] : shards[0];
      },
    });
    expect(() => pickerConformance(bad)).toThrow(/breaks/);
  });
  it('catches a picker that keeps the first list it saw in pick (no rebuild)', () => {
    const bad = (): Picker => {
      let seen: readonly import('../../src/base/types.js').ShardState[] | undefined;
      return {
        name: 'stale',
        pick(shards) {
          if (shards.length === 0) return undefined;
          seen ??= shards;
          return seen.includes(shards[0]!) ? shards[0] : seen[0];
        },
      };
    };
    expect(() => pickerConformance(bad)).toThrow(/breaks/);
  });
  it('passes every built-in', () => {
    for (const algorithm of ['ring', 'maglev', 'rendezvous'] as const) {
      pickerConformance(() => consistentHash({ algorithm, boundedLoad: 1.1 }));
      pickerConformance(() => consistentHash({ algorithm, fallback: p2c() }));
    }
    pickerConformance(() => consistentHash({ algorithm: 'jump', fallback: roundRobin() }), {
      equalWeights: true,
    });
  });
});

describe('balancer and pickers', () => {
  it('resize() through a balancer: keyed runs go where home() says afterwards', async () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const { balancer: b } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      picker,
    });
    const events = recorded(b, 'rehash');
    picker.resize(655373);
    expect(events).toHaveLength(1);
    for (let i = 0; i < 200; i++) {
      const key = `k${i}`;
      const id = await b.run(async (s) => s.id, { key });
      expect(id).toBe(picker.home(b.shards, key)?.id);
      expect(id).toBe(b.homeOf?.(key) ?? id);
    }
    await b.close();
  });
  it('removeShard then home(): keys only move off the removed shard', async () => {
    const clock = new ManualClock();
    for (const algorithm of ['ring', 'maglev', 'rendezvous'] as const) {
      const picker = consistentHash({ algorithm });
      const { balancer: b } = makeBalancer({
        clock,
        shards: Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, target: `s${i}` })),
        picker,
      });
      const before = new Map<string, string>();
      for (let i = 0; i < 5000; i++)
        before.set(`k${i}`, await b.run(async (s) => s.id, { key: `k${i}` }));
      await b.removeShard('s3');
      let moved = 0;
      for (const [k, was] of before) {
        const now = await b.run(async (s) => s.id, { key: k });
        if (now !== was) {
          moved++;
          if (algorithm !== 'maglev') expect(was).toBe('s3');
        }
      }
      expect(moved / 5000, algorithm).toBeLessThan(0.2);
      await b.close();
    }
  });
  it('remapFraction with a single maglev instance keeps the table size (low movement)', () => {
    const before = Array.from({ length: 50 }, (_, i) => `s${i}`);
    const after = before.slice(1);
    const one = remapFraction({
      picker: consistentHash({ algorithm: 'maglev' }),
      before,
      after,
      keys: 20000,
    });
    expect(one).toBeLessThan(0.06);
  });
});
