import { type Histogram, MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { instrument } from '../../src/otel/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { failAfter, makeBalancer, resolveAfter, tick } from '../helpers.js';
import { collect, type Point, sum, TestReader } from './metrics.js';

const shardsOf = (points: Point[] | undefined) =>
  (points ?? []).map((p) => p.attributes['shardwise.shard']).sort();

describe('otel with membership changes', () => {
  let provider: MeterProvider | undefined;
  afterEach(async () => {
    await provider?.shutdown();
    provider = undefined;
  });

  function setup(ids = ['a', 'b', 'c']) {
    const reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    const { clock, balancer } = makeBalancer({
      shards: ids.map((id) => ({ id, target: id })),
      random: seededRandom(3),
      maxInFlightPerShard: 4,
      retry: { attempts: 3, budget: false, backoff: { baseMs: 1, maxMs: 2 } },
    });
    return { reader, clock, balancer };
  }

  it('gauges of a removed shard stop being reported (no frozen in-flight after it drained)', async () => {
    const { reader, clock, balancer } = setup(['a', 'b']);
    const detach = instrument(balancer, { meterProvider: provider! });
    // Two calls on each shard; one collection sees them in flight.
    const runs = Array.from({ length: 4 }, () => balancer.run(() => resolveAfter(clock, 10, 1)));
    const m1 = await collect(reader);
    expect(shardsOf(m1.get('shardwise.in_flight'))).toEqual(['a', 'b']);
    const inFlightOf = (m: Map<string, Point[]>, id: string) =>
      (m.get('shardwise.in_flight') ?? []).find((p) => p.attributes['shardwise.shard'] === id)
        ?.value;
    expect(inFlightOf(m1, 'b')).toBe(2);
    // b leaves and drains: its calls finish; nothing is in flight anywhere.
    const removal = balancer.removeShard('b');
    await tick(clock, 20);
    await Promise.all(runs);
    await removal;
    expect(balancer.stats().inFlight).toBe(0);
    const m2 = await collect(reader);
    // Summed by shard (as docs/fleet.md says to read it), in-flight must be 0 now.
    expect(sum(m2.get('shardwise.in_flight'))).toBe(0);
    // A cumulative reader keeps every attribute set it saw: the departed shard reads 0 in flight.
    expect(inFlightOf(m2, 'b')).toBe(0);
    // And it stays 0 at the next collection (forgotten, not observed again).
    const m3 = await collect(reader);
    expect(inFlightOf(m3, 'b')).toBe(0);
    expect(sum(m3.get('shardwise.in_flight'))).toBe(0);
    // Its cap reads 0 too: summed caps are the capacity of the shards still there.
    const limitOf = (m: Map<string, Point[]>, id: string) =>
      (m.get('shardwise.limit') ?? []).find((p) => p.attributes['shardwise.shard'] === id)?.value;
    expect(limitOf(m1, 'b')).toBe(4);
    expect(limitOf(m2, 'b')).toBe(0);
    expect(limitOf(m3, 'b')).toBe(0);
    expect(sum(m3.get('shardwise.limit'))).toBe(4);
    detach();
  });

  it('exact counts after a known sequence, with a removal and a re-add in between', async () => {
    const { reader, clock, balancer } = setup(['a', 'b']);
    const detach = instrument(balancer, { meterProvider: provider! });
    // 10 successes.
    const ok = Array.from({ length: 10 }, () => balancer.run(() => resolveAfter(clock, 2, 1)));
    await tick(clock, 5);
    await Promise.all(ok);
    // One run failing on its first attempt, then succeeding: 1 failure, 1 retry.
    const flaky = balancer.run(
      (_s, ctx) =>
        ctx.attempt === 1 ? failAfter(clock, 1, new Error('x')) : resolveAfter(clock, 1, 2),
      { idempotent: true },
    );
    await tick(clock, 10);
    await flaky;
    await balancer.removeShard('b');
    balancer.addShard({ id: 'b', target: 'b2' });
    const more = Array.from({ length: 4 }, () => balancer.run(() => resolveAfter(clock, 2, 1)));
    await tick(clock, 5);
    await Promise.all(more);
    const m = await collect(reader);
    const stats = balancer.stats();
    expect(sum(m.get('shardwise.attempts'))).toBe(16);
    expect(sum(m.get('shardwise.attempts'), { 'shardwise.outcome': 'success' })).toBe(15);
    expect(sum(m.get('shardwise.attempts'), { 'shardwise.outcome': 'failure' })).toBe(1);
    expect(sum(m.get('shardwise.retries'))).toBe(stats.retries);
    expect(stats.retries).toBe(1);
    expect(stats.completed).toBe(15);
    const hist = m.get('shardwise.attempt.duration') ?? [];
    expect(hist.reduce((s, p) => s + (p.value as Histogram).count, 0)).toBe(16);
    detach();
  });

  it('a draining shard: its in-flight is still what stats says while it drains (gauges follow stats)', async () => {
    const { reader, clock, balancer } = setup(['a', 'b']);
    instrument(balancer, { meterProvider: provider! });
    const runs = Array.from({ length: 4 }, () => balancer.run(() => resolveAfter(clock, 10, 1)));
    const removal = balancer.removeShard('b');
    const m = await collect(reader);
    const stats = balancer.stats();
    for (const s of stats.shards) {
      const p = (m.get('shardwise.in_flight') ?? []).find(
        (x) => x.attributes['shardwise.shard'] === s.id,
      );
      expect(p?.value).toBe(s.inFlight);
    }
    expect(sum(m.get('shardwise.queue.size'))).toBe(stats.queued);
    await tick(clock, 20);
    await Promise.all(runs);
    await removal;
  });

  it('instrument() twice on one balancer, detach one: the other keeps counting', async () => {
    const { reader, clock, balancer } = setup(['a']);
    const r2 = new TestReader();
    const p2 = new MeterProvider({ readers: [r2] });
    const d1 = instrument(balancer, { meterProvider: provider! });
    const d2 = instrument(balancer, { meterProvider: p2 });
    d1();
    const run = balancer.run(() => resolveAfter(clock, 1, 1));
    await tick(clock, 2);
    await run;
    expect(sum((await collect(r2)).get('shardwise.attempts'))).toBe(1);
    expect(sum((await collect(reader)).get('shardwise.attempts'))).toBe(0);
    d2();
    await p2.shutdown();
  });
});
