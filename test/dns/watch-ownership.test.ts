import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { type DnsChange, type DnsWatch, watchDns } from '../../src/dns/index.js';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';
import { DnsServer, DOMAIN, findDnsmasq, next } from './dnsmasq.js';

const DNSMASQ = findDnsmasq();
const NAME = `ingest.${DOMAIN}`;

function balancerOn(clock: ManualClock, shards = [{ id: 'seed', target: 'http://seed:1' }]) {
  return makeBalancer({ clock, shards, random: seededRandom(5) }).balancer;
}
const ids = (b: { shards: readonly { id: string }[] }) => b.shards.map((s) => s.id);

/** A UDP "DNS server" that never answers: resolutions stay in flight. */
async function silentServer(): Promise<{ address: string; socket: Socket; queries: number }> {
  const socket = createSocket('udp4');
  const state = { address: '', socket, queries: 0 };
  socket.on('message', () => {
    state.queries++;
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  state.address = `127.0.0.1:${socket.address().port}`;
  return state;
}

describe.skipIf(DNSMASQ === undefined)('watchDns', () => {
  let dns: DnsServer | undefined;
  let watches: DnsWatch[] = [];
  let http: HttpBalancer | undefined;
  afterEach(async () => {
    for (const w of watches) w.close();
    watches = [];
    await http?.close();
    http = undefined;
    await dns?.close();
    dns = undefined;
  });

  it('close() while the first resolution is in flight: nothing applied, no timer, ready rejects', async () => {
    const silent = await silentServer();
    try {
      const clock = new ManualClock();
      const balancer = balancerOn(clock);
      const w = watchDns(balancer, {
        hostname: NAME,
        port: 80,
        servers: [silent.address],
        timeoutMs: 5_000,
      });
      watches.push(w);
      const errors: unknown[] = [];
      w.on('error', (e) => errors.push(e));
      for (let i = 0; i < 100 && silent.queries === 0; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(silent.queries).toBeGreaterThan(0);
      w.close();
      await expect(w.ready).rejects.toThrow(/closed before/);
      await new Promise((r) => setTimeout(r, 50));
      await flush();
      expect(clock.pendingTimers).toBe(0);
      expect(ids(balancer)).toEqual(['seed']);
      expect(errors).toEqual([]);
    } finally {
      silent.socket.close();
    }
  });

  it('IPv6 answers: ids [address]:port, targets http://[address]:port', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11', '::1'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const w = watchDns(balancer, { hostname: NAME, port: 8080, servers: [dns.address] });
    watches.push(w);
    await w.ready;
    expect(balancer.shards.map((s) => [s.id, s.target]).sort()).toEqual([
      ['127.0.0.11:8080', 'http://127.0.0.11:8080'],
      ['[::1]:8080', 'http://[::1]:8080'],
    ]);
  });

  it('IPv6 on the HTTP balancer: the target is a valid origin', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['::1'] } });
    http = createHttpBalancer({ origins: ['http://127.0.0.1:1'] });
    const w = watchDns(http, { hostname: NAME, port: 8080, servers: [dns.address] });
    watches.push(w);
    await w.ready;
    expect(http.shards.map((s) => [s.id, s.target.origin])).toEqual([
      ['[::1]:8080', 'http://[::1]:8080'],
    ]);
  });

  it('the first resolution replaces the seed shards, even one whose id is a resolved address:port (target from DNS)', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    // A seed built from a cached list, with the plain-http target and another zone.
    const { balancer } = makeBalancer({
      shards: [{ id: '127.0.0.11:9000', target: 'http://127.0.0.11:9000', zone: 'z1' }],
      random: seededRandom(5),
    });
    const w = watchDns(balancer, {
      hostname: NAME,
      port: 9000,
      scheme: 'https',
      servers: [dns.address],
    });
    watches.push(w);
    await w.ready;
    expect(ids(balancer)).toEqual(['127.0.0.11:9000']);
    // Documented: targets are `${scheme}://${address}:${port}`.
    expect(balancer.shards[0]!.target).toBe('https://127.0.0.11:9000');
  });

  it('the same, on the HTTP balancer: requests go to the scheme the watch was given', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    http = createHttpBalancer({
      shards: [{ id: '127.0.0.11:9000', target: 'http://127.0.0.11:9000' }],
    });
    const w = watchDns(http, {
      hostname: NAME,
      port: 9000,
      scheme: 'https',
      servers: [dns.address],
    });
    watches.push(w);
    await w.ready;
    expect(http.shards[0]!.target.origin).toBe('https://127.0.0.11:9000');
  });

  it('SRV: zero weights among positive ones, and duplicate records of one address:port', async () => {
    dns = await DnsServer.start({
      hosts: { a: ['127.0.0.21'], b: ['127.0.0.21'] },
      srv: [
        { name: '_ingest._tcp', target: 'a', port: 9001, weight: 10 },
        { name: '_ingest._tcp', target: 'b', port: 9001, weight: 30 },
        { name: '_ingest._tcp', target: 'a', port: 9002, weight: 0 },
      ],
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const w = watchDns(balancer, { srv: `_ingest._tcp.${DOMAIN}`, servers: [dns.address] });
    watches.push(w);
    await w.ready;
    expect(balancer.shards.map((s) => [s.id, s.weight])).toEqual([
      ['127.0.0.21:9001', 40],
      ['127.0.0.21:9002', 0.1],
    ]);
  });

  it('a close() from a change listener: no further timer', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const w = watchDns(balancer, { hostname: NAME, port: 80, servers: [dns.address] });
    watches.push(w);
    w.on('change', () => w.close());
    await w.ready;
    await flush();
    expect(w.closed).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a watch on a balancer closed while DNS keeps failing stops too', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const w = watchDns(balancer, {
      hostname: NAME,
      port: 80,
      servers: [dns.address],
      timeoutMs: 200,
    });
    watches.push(w);
    await w.ready;
    await balancer.close();
    await dns.setHosts({ other: ['127.0.0.99'] }); // NXDOMAIN from now on
    const errors: unknown[] = [];
    w.on('error', (e) => errors.push(e));
    for (let i = 0; i < 6 && clock.pendingTimers > 0; i++) {
      const before = errors.length;
      clock.advance(clock.nextTimerAt()! - clock.now());
      for (let j = 0; j < 200 && errors.length === before && !w.closed; j++)
        await new Promise((r) => setTimeout(r, 10));
    }
    // Observation (not a documented promise): it goes on retrying, reporting each failure.
    expect({ closed: w.closed, errors: errors.length }).toEqual({ closed: true, errors: 0 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('change events match what the balancer did, over several refreshes', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11', '127.0.0.12'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const w = watchDns(balancer, { hostname: NAME, port: 80, servers: [dns.address] });
    watches.push(w);
    await w.ready;
    const added: string[] = [];
    const removed: string[] = [];
    balancer.on('shardAdded', (e) => added.push(e.shardId));
    balancer.on('shardRemoved', (e) => removed.push(e.shardId));
    const changes: DnsChange[] = [];
    w.on('change', (c) => changes.push(c));
    for (const set of [
      ['127.0.0.12', '127.0.0.13'],
      ['127.0.0.13'],
      ['127.0.0.11', '127.0.0.13'],
    ]) {
      await dns.setHosts({ ingest: set });
      const change = next(w, 'change');
      clock.advance(1_000);
      await change;
    }
    expect(changes.flatMap((c) => c.added)).toEqual(added);
    expect(changes.flatMap((c) => c.removed)).toEqual(removed);
    expect(ids(balancer)).toEqual(['127.0.0.13:80', '127.0.0.11:80']);
  });
});
