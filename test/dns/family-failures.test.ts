/**
 * watchDns's promises (docs/fleet.md "Per pod, with a headless Kubernetes Service", docs/reference.md
 * "## Fleets") against a programmable DNS server on 127.0.0.1 (./fake-dns.ts): dnsmasq cannot
 * fail only one of A and AAAA.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type DnsChange, type DnsWatch, watchDns } from '../../src/dns/index.js';
import type { Balancer } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';
import { type Answer, FakeDns } from './fake-dns.js';

function balancerOn(clock: ManualClock) {
  return makeBalancer({
    clock,
    shards: [{ id: 'seed', target: 'http://seed:1' }],
    random: seededRandom(5),
  }).balancer;
}
const ids = (b: Balancer<string>) => b.shards.map((s) => s.id);

/** Waits (real time, bounded) for an event of the watch. */
function next(watch: DnsWatch, event: 'change' | 'error', ms = 5_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      watch.off(event, on);
      reject(new Error(`no '${event}' within ${ms} ms`));
    }, ms);
    const on = (v: unknown) => {
      clearTimeout(t);
      resolve(v);
    };
    watch.once(event, on);
  });
}

/** Waits (real time, bounded) until `check` holds. */
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  for (let waited = 0; !check() && waited < ms; waited += 10) {
    await new Promise((r) => setTimeout(r, 10));
  }
}

const A = (address: string, ttl = 0): Answer => ({ type: 'A', address, ttl });
const AAAA = (address: string, ttl = 0): Answer => ({ type: 'AAAA', address, ttl });

/**
 * Makes the DNS change (`change()`), fires the watch's next refresh and waits until it asked
 * `queries` more questions and applied or reported the result; its changes and errors.
 */
async function refreshWith(
  clock: ManualClock,
  watch: DnsWatch,
  dns: FakeDns,
  queries: number,
  change: () => void,
): Promise<{ changes: DnsChange[]; errors: unknown[] }> {
  const changes: DnsChange[] = [];
  const errors: unknown[] = [];
  watch.on('change', (c) => changes.push(c));
  watch.on('error', (e) => errors.push(e));
  change();
  const before = dns.queries.length;
  clock.advance(clock.nextTimerAt()! - clock.now());
  await until(
    () => dns.queries.length >= before + queries && (changes.length > 0 || errors.length > 0),
  );
  await flush();
  return { changes, errors };
}

describe('watchDns against a DNS server that fails one family, rotates answers, hangs', () => {
  let dns: FakeDns | undefined;
  let watch: DnsWatch | undefined;
  afterEach(async () => {
    watch?.close();
    watch = undefined;
    await dns?.close();
    dns = undefined;
  });

  it('hostname, dual stack: an AAAA SERVFAIL on a refresh keeps the IPv6 pods (a failed answer keeps the last good set)', async () => {
    let aaaa: 'ok' | 'servfail' = 'ok';
    dns = await FakeDns.start((name, type) => {
      if (name !== 'ingest.svc.test') return { rcode: 3 };
      if (type === 'A') return { answers: [A('127.0.0.11')] };
      if (type === 'AAAA') return aaaa === 'ok' ? { answers: [AAAA('fd00::11')] } : { rcode: 2 };
      return { answers: [] };
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: 'ingest.svc.test', port: 80, servers: [dns.address] });
    await watch.ready;
    expect(ids(balancer).sort()).toEqual(['127.0.0.11:80', '[fd00::11]:80']);
    const { changes } = await refreshWith(clock, watch, dns, 2, () => {
      aaaa = 'servfail';
    });
    // A DNS server failure for one family is not "the pod left".
    expect({ ids: ids(balancer).sort(), removed: changes.flatMap((c) => c.removed) }).toEqual({
      ids: ['127.0.0.11:80', '[fd00::11]:80'],
      removed: [],
    });
  });

  it('SRV, dual-stack target: its AAAA lookup failing (SERVFAIL) keeps its IPv6 shard ("its shards stay at the addresses it last had")', async () => {
    let aaaa: 'ok' | 'servfail' = 'ok';
    dns = await FakeDns.start((name, type) => {
      if (name === '_ingest._tcp.svc.test' && type === 'SRV') {
        return {
          answers: [
            { type: 'SRV', priority: 0, weight: 1, port: 9001, target: 'a.svc.test', ttl: 0 },
          ],
        };
      }
      if (name === 'a.svc.test' && type === 'A') return { answers: [A('127.0.0.21')] };
      if (name === 'a.svc.test' && type === 'AAAA') {
        return aaaa === 'ok' ? { answers: [AAAA('fd00::21')] } : { rcode: 2 };
      }
      return { rcode: 3 };
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { srv: '_ingest._tcp.svc.test', servers: [dns.address] });
    await watch.ready;
    expect(ids(balancer).sort()).toEqual(['127.0.0.21:9001', '[fd00::21]:9001']);
    const { changes, errors } = await refreshWith(clock, watch, dns, 3, () => {
      aaaa = 'servfail';
    });
    expect({ ids: ids(balancer).sort(), removed: changes.flatMap((c) => c.removed) }).toEqual({
      ids: ['127.0.0.21:9001', '[fd00::21]:9001'],
      removed: [],
    });
    expect(errors.length).toBeGreaterThan(0); // and 'error' reports the failed lookup
  });

  it('rotated answers and duplicates: no change, no churn', async () => {
    let round = 0;
    dns = await FakeDns.start((name, type) => {
      if (name !== 'ingest.svc.test' || type !== 'A') return { answers: [] };
      round++;
      return round % 2 === 1
        ? { answers: [A('127.0.0.11'), A('127.0.0.12'), A('127.0.0.13')] }
        : { answers: [A('127.0.0.13'), A('127.0.0.11'), A('127.0.0.12'), A('127.0.0.11')] };
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: 'ingest.svc.test', port: 80, servers: [dns.address] });
    await watch.ready;
    const shards = [...balancer.shards];
    let changes = 0;
    watch.on('change', () => changes++);
    for (let i = 0; i < 3; i++) {
      const before = round;
      clock.advance(clock.nextTimerAt()! - clock.now());
      await until(() => round > before && clock.pendingTimers > 0);
      await flush();
    }
    expect(changes).toBe(0);
    expect(balancer.shards).toEqual(shards);
  });

  it('SERVFAIL for the whole name keeps the set, reports ESERVFAIL, backs off 0.5–1 s', async () => {
    let fail = false;
    dns = await FakeDns.start((name, type) => {
      if (fail) return { rcode: 2 };
      return name === 'ingest.svc.test' && type === 'A'
        ? { answers: [A('127.0.0.11')] }
        : { answers: [] };
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: 'ingest.svc.test', port: 80, servers: [dns.address] });
    await watch.ready;
    fail = true;
    const error = next(watch, 'error');
    clock.advance(clock.nextTimerAt()! - clock.now());
    expect(await error).toMatchObject({ code: 'ESERVFAIL' });
    await flush();
    expect(ids(balancer)).toEqual(['127.0.0.11:80']);
    const wait = clock.nextTimerAt()! - clock.now();
    expect(wait).toBeGreaterThanOrEqual(500);
    expect(wait).toBeLessThanOrEqual(1_000);
  });

  it('close() during an in-flight (hanging) refresh: no timer, no later query, no change', async () => {
    let drop = false;
    dns = await FakeDns.start((name, type) => {
      if (drop) return 'drop';
      return name === 'ingest.svc.test' && type === 'A'
        ? { answers: [A('127.0.0.11')] }
        : { answers: [] };
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, {
      hostname: 'ingest.svc.test',
      port: 80,
      servers: [dns.address],
      timeoutMs: 200,
    });
    await watch.ready;
    drop = true;
    const events: unknown[] = [];
    watch.on('change', (c) => events.push(c));
    watch.on('error', (e) => events.push(e));
    const before = dns.queries.length;
    clock.advance(clock.nextTimerAt()! - clock.now());
    await until(() => dns!.queries.length > before);
    watch.close();
    await new Promise((r) => setTimeout(r, 1_000));
    await flush();
    expect(clock.pendingTimers).toBe(0);
    expect(events).toEqual([]);
    expect(ids(balancer)).toEqual(['127.0.0.11:80']);
  });

  it('balancer closed: the watch stops then — no pending timer, no further DNS query', async () => {
    dns = await FakeDns.start((name, type) =>
      name === 'ingest.svc.test' && type === 'A'
        ? { answers: [A('127.0.0.11', 0)] }
        : { answers: [] },
    );
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, {
      hostname: 'ingest.svc.test',
      port: 80,
      servers: [dns.address],
      refreshMs: 60_000,
    });
    await watch.ready;
    await balancer.close();
    const before = dns.queries.length;
    const pendingAfterClose = clock.pendingTimers;
    clock.advance(1_000);
    await until(() => watch!.closed, 2_000);
    await new Promise((r) => setTimeout(r, 100));
    expect({ pendingAfterClose, queriesAfterClose: dns.queries.length - before }).toEqual({
      pendingAfterClose: 0,
      queriesAfterClose: 0,
    });
  });
});
