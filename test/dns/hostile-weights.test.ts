/**
 * Legal SRV answers a hostile (or merely generous) DNS server can give, against real dnsmasq:
 * weights up to 65 535, records naming one address and port summed, thousands of records (over
 * TCP), and weights that move on every refresh. SRV weights are relative: the watch scales them
 * into what the picker accepts, keeping their ratios, so no answer is refused for its weights,
 * `ready` resolves, and a ring built from an answer of n shards holds at most
 * `vnodes × DNS_WEIGHT_TOTAL + n` points (the bound that keeps a refresh's rebuild short; its
 * time is measured in bench/dns-reweight.bench.ts, never asserted here).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DNS_WEIGHT_TOTAL, type DnsWatch, watchDns } from '../../src/dns/index.js';
import { type Balancer, consistentHash, MAX_WEIGHT } from '../../src/index.js';
import type { ConsistentHashPicker } from '../../src/pickers/hashing/types.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { makeBalancer } from '../helpers.js';
import { DnsServer, DOMAIN, findDnsmasq, next, type SrvRecord } from './dnsmasq.js';

const DNSMASQ = findDnsmasq();
const SRV = '_ingest._tcp';
const VNODES = 160;

function balancerWith(clock: ManualClock, picker?: ConsistentHashPicker) {
  return makeBalancer({
    clock,
    shards: [{ id: 'seed', target: 'http://seed:1' }],
    random: seededRandom(3),
    ...(picker === undefined ? {} : { picker }),
  }).balancer;
}

/** `promise`, or a rejection after `ms` of real time: a `ready` that never resolves fails. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const weightOf = (b: Balancer<string>, id: string) => b.shards.find((s) => s.id === id)!.weight;
const totalWeight = (b: Balancer<string>) => b.shards.reduce((sum, s) => sum + s.weight, 0);

describe.skipIf(DNSMASQ === undefined)('watchDns with hostile SRV weights (dnsmasq)', () => {
  let dns: DnsServer | undefined;
  let watch: DnsWatch | undefined;
  afterEach(async () => {
    watch?.close();
    watch = undefined;
    await dns?.close();
    dns = undefined;
  });

  it('SRV weight 65 535 under consistentHash(): applied, ready resolves, the ratio kept', async () => {
    dns = await DnsServer.start({
      hosts: { a: ['127.0.0.21'], b: ['127.0.0.22'] },
      srv: [
        { name: SRV, target: 'a', port: 9001, weight: 65_535 },
        { name: SRV, target: 'b', port: 9002, weight: 1 },
      ],
    });
    const picker = consistentHash({ vnodes: VNODES });
    const balancer = balancerWith(new ManualClock(), picker);
    const errors: unknown[] = [];
    watch = watchDns(balancer, { srv: `${SRV}.${DOMAIN}`, servers: [dns.address] });
    watch.on('error', (error) => errors.push(error));
    // Taken as given, 160 × 65 536 = 10.5 M points: over the ring's bound, refused for ever.
    await within(watch.ready, 10_000, 'watch.ready');
    expect(errors).toEqual([]);
    expect(balancer.shards.map((s) => s.id)).toEqual(['127.0.0.21:9001', '127.0.0.22:9002']);
    expect(
      weightOf(balancer, '127.0.0.21:9001') / weightOf(balancer, '127.0.0.22:9002'),
    ).toBeCloseTo(65_535, 6);
    expect(totalWeight(balancer)).toBeCloseTo(DNS_WEIGHT_TOTAL, 9);
    expect(picker.describe().points).toBeLessThanOrEqual(VNODES * DNS_WEIGHT_TOTAL + 2);
  });

  it('20 records naming one address and port (default picker): summed past MAX_WEIGHT, applied as one shard', async () => {
    const duplicates: SrvRecord[] = Array.from({ length: 20 }, (_, i) => ({
      name: SRV,
      target: `d${i}`,
      port: 9000,
      weight: 65_535,
    }));
    dns = await DnsServer.start({
      hosts: {
        ...Object.fromEntries(duplicates.map((r) => [r.target, ['127.0.0.30']])),
        e: ['127.0.0.31'],
      },
      srv: [...duplicates, { name: SRV, target: 'e', port: 9000, weight: 65_535 }],
    });
    const balancer = balancerWith(new ManualClock());
    watch = watchDns(balancer, { srv: `${SRV}.${DOMAIN}`, servers: [dns.address] });
    const change = next(watch, 'change');
    // 20 × 65 535 = 1 310 700, over MAX_WEIGHT: refused for ever before the scaling.
    await within(watch.ready, 10_000, 'watch.ready');
    expect(20 * 65_535).toBeGreaterThan(MAX_WEIGHT);
    expect((await change).added).toEqual(['127.0.0.30:9000', '127.0.0.31:9000']);
    expect(
      weightOf(balancer, '127.0.0.30:9000') / weightOf(balancer, '127.0.0.31:9000'),
    ).toBeCloseTo(20, 9);
    expect(totalWeight(balancer)).toBeCloseTo(DNS_WEIGHT_TOTAL, 9);
  });

  it('3 000 records, answered over TCP, under consistentHash(): applied, ready resolves, the ring within its bound', async () => {
    const n = 3_000;
    // One short target ("s", no domain): 3 000 records of 21 bytes fit a 64 KiB TCP answer.
    const srv: SrvRecord[] = Array.from({ length: n }, (_, i) => ({
      name: SRV,
      target: 's.',
      port: 10_000 + i,
      weight: 1 + ((i * 7_919) % 65_535),
    }));
    dns = await DnsServer.start({ hosts: { 's.': ['127.0.0.1'] }, srv });
    const picker = consistentHash({ vnodes: VNODES });
    const balancer = balancerWith(new ManualClock(), picker);
    watch = watchDns(balancer, { srv: `${SRV}.${DOMAIN}`, servers: [dns.address] });
    await within(watch.ready, 30_000, 'watch.ready');
    expect(balancer.shards.length).toBe(n);
    // Every weight is its SRV weight times one factor: the ratios are the answer's.
    const factor = DNS_WEIGHT_TOTAL / srv.reduce((sum, r) => sum + r.weight!, 0);
    for (const r of [srv[0]!, srv[1_234]!, srv[n - 1]!]) {
      expect(weightOf(balancer, `127.0.0.1:${r.port}`) / r.weight!).toBeCloseTo(factor, 12);
    }
    expect(totalWeight(balancer)).toBeCloseTo(DNS_WEIGHT_TOTAL, 6);
    expect(picker.describe().points).toBeLessThanOrEqual(VNODES * DNS_WEIGHT_TOTAL + n);
  });

  it('a reweight storm: weights just under the ring limit, moved on every refresh, never build more than the bound', async () => {
    const n = 20;
    // Σ 62 000 × 160 vnodes = 9.92 M points taken as given: just under the ring's 10 M bound,
    // and ~2 s of blocked event loop to rebuild on every refresh that moves a weight.
    const zoneAt = (step: number) => ({
      hosts: Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`r${i}`, [`127.0.0.${40 + i}`]]),
      ),
      srv: Array.from({ length: n }, (_, i) => ({
        name: SRV,
        target: `r${i}`,
        port: 9000,
        weight: 3_100 - step * (i + 1),
      })),
    });
    dns = await DnsServer.start(zoneAt(0));
    const clock = new ManualClock();
    const picker = consistentHash({ vnodes: VNODES });
    const balancer = balancerWith(clock, picker);
    const errors: unknown[] = [];
    watch = watchDns(balancer, { srv: `${SRV}.${DOMAIN}`, servers: [dns.address] });
    watch.on('error', (error) => errors.push(error));
    await within(watch.ready, 10_000, 'watch.ready');
    const bound = VNODES * DNS_WEIGHT_TOTAL + n;
    const points = [picker.describe().points!];
    for (let step = 1; step <= 4; step++) {
      await dns.setZone(zoneAt(step));
      const change = next(watch, 'change');
      clock.advance(1_000); // TTL 0: the next refresh, after the 1 s floor
      expect((await change).reweighted).toHaveLength(n);
      points.push(picker.describe().points!);
      // The weights applied are the new answer's, scaled: r0 moved least, r19 most.
      const w = (i: number) => weightOf(balancer, `127.0.0.${40 + i}:9000`);
      expect(w(0) / w(n - 1)).toBeCloseTo((3_100 - step) / (3_100 - step * n), 9);
    }
    expect(errors).toEqual([]);
    for (const p of points) expect(p).toBeLessThanOrEqual(bound);
  });
});
