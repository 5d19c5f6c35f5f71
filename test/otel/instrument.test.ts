import { type Histogram, MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, consistentHash, PushBackError, TimeoutError } from '../../src/index.js';
import { instrument, outcomeOf } from '../../src/otel/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick } from '../helpers.js';
import { collect, type Point, sum, TestReader } from './metrics.js';

function gauge(points: Point[] | undefined, shard?: string): number | undefined {
  const p = (points ?? []).find(
    (x) => shard === undefined || x.attributes['shardwise.shard'] === shard,
  );
  return p?.value as number | undefined;
}

describe('instrument (OpenTelemetry metrics)', () => {
  let provider: MeterProvider | undefined;
  afterEach(async () => {
    await provider?.shutdown();
    provider = undefined;
  });

  function setup() {
    const reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      random: seededRandom(11),
      timeoutMs: 100,
      maxInFlightPerShard: 4,
      retry: { attempts: 3, budget: false, backoff: { baseMs: 1, maxMs: 5 } },
    });
    return { reader, clock, balancer };
  }

  it('validates its options', () => {
    const { balancer } = setup();
    expect(() => instrument(balancer, {} as never)).toThrow(ConfigError);
    expect(() => instrument(balancer, {} as never)).toThrow(/`meterProvider` or `meter`/);
    expect(() => instrument(balancer, { meter: {} } as never)).toThrow(/`meter` must be/);
    expect(() => instrument({} as never, { meterProvider: provider! })).toThrow(/`balancer`/);
  });

  it('classifies outcomes', () => {
    expect(outcomeOf(new TimeoutError(5, 'a'))).toBe('timeout');
    expect(outcomeOf(new PushBackError(100))).toBe('push_back');
    expect(outcomeOf(new Error('boom'))).toBe('failure');
  });

  it('counts what stats() counts: attempts, failures, push-backs, retries, ejections', async () => {
    const { reader, clock, balancer } = setup();
    const detach = instrument(balancer, { meterProvider: provider! });
    // c always fails (it gets ejected); d times out every other call; b pushes back every third.
    const calls = new Map<string, number>();
    const work = (shard: { id: string }) => {
      const n = (calls.get(shard.id) ?? 0) + 1;
      calls.set(shard.id, n);
      if (shard.id === 'c') return failAfter(clock, 3, new Error('boom'));
      if (shard.id === 'd' && n % 2 === 0) return resolveAfter(clock, 500, 'late');
      if (shard.id === 'b' && n % 3 === 0) return failAfter(clock, 2, new PushBackError(10));
      return resolveAfter(clock, 5 + (n % 7), 'ok');
    };
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < 300; i++) {
      runs.push(balancer.run(work, { idempotent: true }).catch(() => 'failed'));
      if (i % 10 === 9) await tick(clock, 7);
    }
    await tick(clock, 1_000);
    await Promise.all(runs);

    const stats = balancer.stats();
    const m = await collect(reader);
    const attempts = m.get('shardwise.attempts');
    const requests = stats.shards.reduce((s, x) => s + x.requests, 0);
    const failures = stats.shards.reduce((s, x) => s + x.failures, 0);
    const ejections = stats.shards.reduce((s, x) => s + x.ejections, 0);
    expect(requests).toBeGreaterThan(300);
    expect(sum(attempts)).toBe(requests);
    for (const shard of stats.shards) {
      expect(sum(attempts, { 'shardwise.shard': shard.id })).toBe(shard.requests);
    }
    expect(sum(attempts, { 'shardwise.outcome': 'success' })).toBe(stats.completed);
    // A push-back is a signal of load, not a failure of the shard (stats count it apart).
    expect(
      sum(attempts, { 'shardwise.outcome': 'failure' }) +
        sum(attempts, { 'shardwise.outcome': 'timeout' }),
    ).toBe(failures);
    expect(sum(attempts, { 'shardwise.outcome': 'timeout' })).toBeGreaterThan(0);
    expect(sum(attempts, { 'shardwise.outcome': 'push_back' })).toBeGreaterThan(0);
    expect(sum(m.get('shardwise.retries'))).toBe(stats.retries);
    expect(stats.retries).toBeGreaterThan(0);
    expect(sum(m.get('shardwise.ejections'))).toBe(ejections);
    expect(sum(m.get('shardwise.ejections'), { 'shardwise.shard': 'c' })).toBeGreaterThan(0);
    const histogram = m.get('shardwise.attempt.duration') ?? [];
    expect(histogram.reduce((s, p) => s + (p.value as Histogram).count, 0)).toBe(requests);
    const timeouts = histogram.find((p) => p.attributes['shardwise.outcome'] === 'timeout')!;
    expect((timeouts.value as Histogram).min).toBeCloseTo(0.1, 6); // timeoutMs 100, in seconds
    detach();
  });

  it('observes in-flight, limits and the queue from stats()', async () => {
    const { reader, clock, balancer } = setup();
    instrument(balancer, { meterProvider: provider! });
    const runs = Array.from({ length: 20 }, () => balancer.run(() => resolveAfter(clock, 10, 1)));
    const stats = balancer.stats();
    const m = await collect(reader);
    for (const shard of stats.shards) {
      expect(gauge(m.get('shardwise.in_flight'), shard.id)).toBe(shard.inFlight);
      expect(gauge(m.get('shardwise.limit'), shard.id)).toBe(4);
    }
    expect(gauge(m.get('shardwise.queue.size'))).toBe(stats.queued);
    expect(stats.queued).toBe(4); // 20 runs, 4 shards × 4 slots
    await tick(clock, 30);
    await Promise.all(runs);
  });

  it('counts displaced attempts by reason and home, as stats() does', async () => {
    const reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash({ algorithm: 'maglev', affinity: 'spill' }),
      random: seededRandom(5),
      maxInFlightPerShard: 2,
      retry: { attempts: 2, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
    });
    instrument(balancer, { meter: provider.getMeter('test') });
    // 60 keyed runs at once on caps of 2 (moves for reason capped), one failing once (retry).
    const runs = Array.from({ length: 60 }, (_, i) =>
      balancer.run(
        (shard, ctx) =>
          i === 0 && ctx.attempt === 1
            ? failAfter(clock, 1, new Error('x'))
            : resolveAfter(clock, 5, shard.id),
        { key: `k${i}`, idempotent: true },
      ),
    );
    for (let t = 0; t < 100 && balancer.stats().completed < 60; t++) await tick(clock, 5);
    await Promise.all(runs);
    const stats = balancer.stats();
    expect(stats.displaced.capped).toBeGreaterThan(0);
    expect(stats.displaced.retry).toBe(1);
    const displaced = (await collect(reader)).get('shardwise.displaced');
    expect(sum(displaced)).toBe(stats.displaced.total);
    for (const reason of ['capped', 'ejected', 'retry', 'bounded'] as const) {
      expect(sum(displaced, { 'shardwise.reason': reason })).toBe(stats.displaced[reason]);
    }
    for (const shard of stats.shards) {
      expect(sum(displaced, { 'shardwise.shard': shard.id })).toBe(shard.displaced.total);
    }
  });

  it('stops counting and observing after detach', async () => {
    const { reader, clock, balancer } = setup();
    const detach = instrument(balancer, { meterProvider: provider! });
    const first = balancer.run(() => resolveAfter(clock, 1, 1));
    await tick(clock, 1);
    await first;
    expect(sum((await collect(reader)).get('shardwise.attempts'))).toBe(1);
    detach();
    detach(); // idempotent
    const run = balancer.run(() => resolveAfter(clock, 1, 1));
    expect(balancer.stats().inFlight).toBe(1);
    const m = await collect(reader);
    // The gauges were not observed again: no point shows the call now in flight.
    expect(sum(m.get('shardwise.in_flight'))).toBe(0);
    await tick(clock, 1);
    await run;
    expect(sum((await collect(reader)).get('shardwise.attempts'))).toBe(1);
    expect(balancer.listenerCount('success')).toBe(0);
    expect(balancer.listenerCount('route')).toBe(0);
  });
});
