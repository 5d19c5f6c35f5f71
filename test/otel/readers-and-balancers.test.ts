/**
 * shardwise/otel with several readers or several balancers on one MeterProvider (docs/fleet.md
 * "## Metrics").
 */
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { Balancer } from '../../src/index.js';
import { instrument } from '../../src/otel/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { makeBalancer, resolveAfter, shardsOf, tick } from '../helpers.js';
import { collect, type Point, sum, TestReader } from './metrics.js';

const pointOf = (m: Map<string, Point[]>, name: string, id: string) =>
  (m.get(name) ?? []).find((p) => p.attributes['shardwise.shard'] === id)?.value;

describe('instrument: several readers, several balancers', () => {
  let provider: MeterProvider | undefined;
  afterEach(async () => {
    await provider?.shutdown();
    provider = undefined;
  });

  it('two readers on one MeterProvider (Prometheus + OTLP): a departed shard reads 0 in BOTH, not its last in-flight for ever', async () => {
    const prom = new TestReader();
    const otlp = new TestReader();
    provider = new MeterProvider({ readers: [prom, otlp] });
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      random: seededRandom(3),
      maxInFlightPerShard: 4,
    });
    const detach = instrument(balancer, { meterProvider: provider });
    const runs = Array.from({ length: 4 }, () => balancer.run(() => resolveAfter(clock, 10, 1)));
    // Both readers see b with 2 in flight and a cap of 4.
    const p1 = await collect(prom);
    const o1 = await collect(otlp);
    expect(pointOf(p1, 'shardwise.in_flight', 'b')).toBe(2);
    expect(pointOf(o1, 'shardwise.in_flight', 'b')).toBe(2);
    expect(pointOf(o1, 'shardwise.limit', 'b')).toBe(4);
    // b leaves and drains.
    const removal = balancer.removeShard('b');
    await tick(clock, 20);
    await Promise.all(runs);
    await removal;
    expect(balancer.stats().inFlight).toBe(0);
    // The first reader collects: it sees b at 0 …
    const p2 = await collect(prom);
    expect(pointOf(p2, 'shardwise.in_flight', 'b')).toBe(0);
    // … and the second reader must too ("observed once more at 0 in flight and a limit of 0").
    const o2 = await collect(otlp);
    expect({
      inFlight: pointOf(o2, 'shardwise.in_flight', 'b'),
      limit: pointOf(o2, 'shardwise.limit', 'b'),
      inFlightSum: sum(o2.get('shardwise.in_flight')),
    }).toEqual({ inFlight: 0, limit: 0, inFlightSum: 0 });
    detach();
  });

  it('two balancers on one MeterProvider, told apart by `attributes`: both queues are published (neither overwrites the other)', async () => {
    const reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    const clock = new ManualClock();
    const mk = (seed: number, id: string) =>
      makeBalancer({
        clock,
        shards: shardsOf([id]),
        random: seededRandom(seed),
        maxInFlightPerShard: 1,
      }).balancer;
    const http = mk(1, 'http-a');
    const s3 = mk(2, 's3-a');
    const d1 = instrument(http, {
      meterProvider: provider,
      attributes: { 'shardwise.balancer': 'http' },
    });
    const d2 = instrument(s3, {
      meterProvider: provider,
      attributes: { 'shardwise.balancer': 's3' },
    });
    const r1 = Array.from({ length: 3 }, () => http.run(() => resolveAfter(clock, 10, 1)));
    const r2 = Array.from({ length: 5 }, () => s3.run(() => resolveAfter(clock, 10, 1)));
    expect(http.stats().queued + s3.stats().queued).toBe(6);
    const m = await collect(reader);
    // 2 + 4 runs wait: what the exporter shows must account for both balancers.
    expect(sum(m.get('shardwise.queue.size'))).toBe(6);
    // Every point carries its balancer's attribute, beside the instrument's own.
    const shardPoints = m.get('shardwise.in_flight') ?? [];
    expect(shardPoints.length).toBe(2);
    for (const point of shardPoints) {
      expect(point.attributes['shardwise.balancer']).toBe(
        point.attributes['shardwise.shard'] === 'http-a' ? 'http' : 's3',
      );
    }
    await tick(clock, 100);
    await Promise.all([...r1, ...r2]);
    d1();
    d2();
  });

  it('attributes are checked: the instrument’s own keys and non-primitive values are ConfigErrors', () => {
    provider = new MeterProvider();
    const balancer = new Balancer<string>({ shards: [{ id: 'a', target: 'a' }] });
    const attempt = (attributes: unknown) => () =>
      instrument(balancer, { meterProvider: provider!, attributes: attributes as never });
    expect(attempt({ 'shardwise.shard': 'x' })).toThrow(
      /`attributes\.shardwise\.shard` is the instrument's own attribute/,
    );
    expect(attempt({ job: { nested: 1 } })).toThrow(
      /`attributes\.job` must be a string, a finite number or a boolean/,
    );
    expect(attempt({ job: Number.NaN })).toThrow(/`attributes\.job`/);
    expect(attempt('job=1')).toThrow(/`attributes`/);
    expect(typeof instrument(balancer, { meterProvider: provider, attributes: { job: 'a' } })).toBe(
      'function',
    );
  });
});
