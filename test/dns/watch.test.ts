import { afterEach, describe, expect, it, vi } from 'vitest';
import { type DnsChange, type DnsWatch, watchDns } from '../../src/dns/index.js';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { type Balancer, ConfigError } from '../../src/index.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer, resolveAfter, tick } from '../helpers.js';
import { deadPort, startServers, type TestServer } from '../http/servers.js';
import { startS3, type TestS3 } from '../s3/server.js';
import { DnsServer, DOMAIN, findDnsmasq, next } from './dnsmasq.js';

const DNSMASQ = findDnsmasq();
if (DNSMASQ === undefined) {
  console.log(
    'skipped: dnsmasq not installed (apt-get install -y dnsmasq): the DNS discovery tests',
  );
}

const NAME = `ingest.${DOMAIN}`;

function balancerOn(clock: ManualClock) {
  return makeBalancer({
    clock,
    shards: [{ id: 'seed', target: 'http://seed:1' }],
    random: seededRandom(5),
  }).balancer;
}

const ids = (b: Balancer<string>) => b.shards.map((s) => s.id);

describe('watchDns options', () => {
  const b = balancerOn(new ManualClock());
  const bad: [string, object, RegExp][] = [
    ['neither name', { port: 80 }, /`hostname` or `srv` is required/],
    ['both names', { hostname: 'a', srv: '_a._tcp.b', port: 80 }, /only one of them/],
    ['no port', { hostname: 'a' }, /`port` is required/],
    ['port 0', { hostname: 'a', port: 0 }, /`port` must be an integer from 1 to 65535, got 0/],
    ['port with srv', { srv: '_a._tcp.b', port: 80 }, /SRV records carry the port/],
    ['scheme', { hostname: 'a', port: 1, scheme: 'ftp' }, /`scheme` must be one of/],
    ['refreshMs', { hostname: 'a', port: 1, refreshMs: 0 }, /`refreshMs` must be a positive/],
    ['servers', { hostname: 'a', port: 1, servers: [] }, /`servers` must be a non-empty array/],
    ['server', { hostname: 'a', port: 1, servers: ['not an ip'] }, /`servers` must be IP/],
    ['target', { hostname: 'a', port: 1, target: 'x' }, /`target` must be a function/],
    ['unknown', { hostname: 'a', port: 1, ttl: 5 }, /`ttl` is not a known option/],
    ['hostname', { hostname: 'a b', port: 1 }, /`hostname` must be a DNS name/],
  ];
  for (const [label, options, message] of bad) {
    it(`rejects ${label}`, () => {
      expect(() => watchDns(b, options as never)).toThrow(ConfigError);
      expect(() => watchDns(b, options as never)).toThrow(message);
    });
  }
  it('rejects something that is not a balancer', () => {
    expect(() => watchDns({} as never, { hostname: 'a', port: 1 })).toThrow(/`balancer` must be/);
  });
});

describe.skipIf(DNSMASQ === undefined)('watchDns against dnsmasq', () => {
  let dns: DnsServer | undefined;
  let watch: DnsWatch | undefined;
  afterEach(async () => {
    watch?.close();
    watch = undefined;
    await dns?.close();
    dns = undefined;
  });

  it('replaces the initial shards with the resolved addresses, ids address:port', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.12', '127.0.0.11'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: NAME, port: 8080, servers: [dns.address] });
    const change = next(watch, 'change');
    await watch.ready;
    expect(await change).toEqual({
      added: ['127.0.0.11:8080', '127.0.0.12:8080'],
      removed: ['seed'],
      reweighted: [],
    });
    expect(balancer.shards.map((s) => [s.id, s.target, s.weight])).toEqual([
      ['127.0.0.11:8080', 'http://127.0.0.11:8080', 1],
      ['127.0.0.12:8080', 'http://127.0.0.12:8080', 1],
    ]);
  });

  it('applies additions and removals on refresh; kept shards keep their state, removed ones drain', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11', '127.0.0.12'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, {
      hostname: NAME,
      port: 9000,
      scheme: 'https',
      servers: [dns.address],
    });
    await watch.ready;
    // Work on both shards: the one that stays gains figures, the one that goes has a call in flight.
    const runs = Array.from({ length: 4 }, (_, i) =>
      balancer.run(() => resolveAfter(clock, 40, i)),
    );
    const kept = balancer.shards.find((s) => s.id === '127.0.0.12:9000')!;
    const gone = balancer.shards.find((s) => s.id === '127.0.0.11:9000')!;
    expect(kept.inFlight).toBeGreaterThan(0);
    expect(gone.inFlight).toBeGreaterThan(0);

    await dns.setHosts({ ingest: ['127.0.0.12', '127.0.0.13'] });
    const change = next(watch, 'change');
    clock.advance(1_000); // TTL 0: refreshed after the 1 s floor
    expect(await change).toEqual({
      added: ['127.0.0.13:9000'],
      removed: ['127.0.0.11:9000'],
      reweighted: [],
    });
    expect(ids(balancer)).toEqual(['127.0.0.12:9000', '127.0.0.13:9000']);
    expect(balancer.shards[0]).toBe(kept); // the same record: EWMA, limits and counts go on
    expect(balancer.shards[1]!.target).toBe('https://127.0.0.13:9000');
    // The removed shard's call finishes (drain), and every run settles.
    await tick(clock, 40);
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(gone.inFlight).toBe(0);
    const keptStats = balancer.stats().shards.find((s) => s.id === kept.id)!;
    expect(keptStats.requests).toBe(2);
    expect(keptStats.ewmaMs).toBeGreaterThan(30); // 40 ms samples from before the refresh
  });

  it('keeps the last good set when a resolution fails, reports it, and retries with backoff', async () => {
    dns = await DnsServer.start({
      hosts: { ingest: ['127.0.0.11', '127.0.0.12'] },
      txt: ['empty'],
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, {
      hostname: NAME,
      port: 80,
      servers: [dns.address],
      refreshMs: 5_000,
      timeoutMs: 300,
    });
    await watch.ready;
    const good = ids(balancer);

    // NXDOMAIN: the name is gone.
    await dns.setHosts({ other: ['127.0.0.99'] });
    let error = next(watch, 'error');
    clock.advance(1_000);
    expect((await error) as { code: string }).toMatchObject({ code: 'ENOTFOUND' });
    await flush();
    expect(ids(balancer)).toEqual(good);
    // Jittered backoff: the first retry within [0.5 s, 1 s], the next within [1 s, 2 s].
    const first = clock.nextTimerAt()! - clock.now();
    expect(first).toBeGreaterThanOrEqual(500);
    expect(first).toBeLessThanOrEqual(1_000);
    error = next(watch, 'error');
    clock.advance(first);
    await error;
    await flush();
    const second = clock.nextTimerAt()! - clock.now();
    expect(second).toBeGreaterThanOrEqual(1_000);
    expect(second).toBeLessThanOrEqual(2_000);

    // The server down: a timeout or a refused query, and still the same set.
    await dns.stop();
    error = next(watch, 'error');
    clock.advance(second);
    expect(['ECONNREFUSED', 'ETIMEOUT']).toContain(((await error) as { code: string }).code);
    await flush();
    expect(ids(balancer)).toEqual(good);

    // Back, with the name restored: the watch recovers by itself.
    await dns.restart();
    await dns.setHosts({ ingest: ['127.0.0.11'] });
    const change = next(watch, 'change');
    clock.advance(clock.nextTimerAt()! - clock.now());
    expect(await change).toMatchObject({ added: [], removed: ['127.0.0.12:80'] });
    expect(ids(balancer)).toEqual(['127.0.0.11:80']);
  });

  it('a change listener that throws: the set is applied, no DNS error is reported, refreshes go on, and the throw is rethrown on its own', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: NAME, port: 8080, servers: [dns.address] });
    await watch.ready;
    const errors: unknown[] = [];
    watch.on('error', (error) => errors.push(error));
    // What the watch throws again on a turn of its own (an uncaught exception, which would fail
    // the vitest run), caught here; anything else queued meanwhile still runs.
    const rethrown: unknown[] = [];
    const microtasks = vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((callback) => {
      try {
        callback();
      } catch (error) {
        rethrown.push(error);
      }
    });
    try {
      const throwing = () => {
        throw new Error('change listener bug');
      };
      let change = next(watch, 'change');
      watch.on('change', throwing);
      await dns.setHosts({ ingest: ['127.0.0.11', '127.0.0.12'] });
      clock.advance(1_000);
      expect((await change).added).toEqual(['127.0.0.12:8080']);
      // The next refresh comes on the usual schedule (no failure backoff) and applies too. (The
      // throwing listener goes last again: listeners after it are skipped, as in Node.)
      watch.off('change', throwing);
      change = next(watch, 'change');
      watch.on('change', throwing);
      await dns.setHosts({ ingest: ['127.0.0.13'] });
      clock.advance(1_000);
      expect(await change).toEqual({
        added: ['127.0.0.13:8080'],
        removed: ['127.0.0.11:8080', '127.0.0.12:8080'],
        reweighted: [],
      });
    } finally {
      microtasks.mockRestore();
    }
    expect(ids(balancer)).toEqual(['127.0.0.13:8080']);
    expect(errors).toEqual([]);
    expect(rethrown.map((e) => (e as Error).message)).toEqual([
      'change listener bug',
      'change listener bug',
    ]);
  });

  it('treats an empty answer (a name without addresses) as a failure', async () => {
    dns = await DnsServer.start({ hosts: {}, txt: ['ingest'] });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: NAME, port: 80, servers: [dns.address] });
    expect((await next(watch, 'error')) as { code: string }).toMatchObject({ code: 'ENODATA' });
    expect(ids(balancer)).toEqual(['seed']); // never zero shards because of DNS
  });

  it('refreshes as the TTL says, never sooner than once a second, never later than refreshMs', async () => {
    const after = async (localTtl: number, refreshMs: number) => {
      const server = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } }, { localTtl });
      const clock = new ManualClock();
      const w = watchDns(balancerOn(clock), {
        hostname: NAME,
        port: 80,
        servers: [server.address],
        refreshMs,
      });
      try {
        await w.ready;
        return clock.nextTimerAt()! - clock.now();
      } finally {
        w.close();
        await server.close();
      }
    };
    expect(await after(3, 60_000)).toBe(3_000);
    expect(await after(3, 2_000)).toBe(2_000);
    expect(await after(0, 60_000)).toBe(1_000);
  });

  it('takes shards, ports and weights from SRV records of the lowest priority', async () => {
    dns = await DnsServer.start({
      hosts: { a: ['127.0.0.21'], b: ['127.0.0.22'], c: ['127.0.0.23'] },
      srv: [
        { name: '_ingest._tcp', target: 'a', port: 9001, weight: 10 },
        { name: '_ingest._tcp', target: 'b', port: 9002, weight: 5 },
        { name: '_ingest._tcp', target: 'c', port: 9003, weight: 50, priority: 1 },
      ],
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { srv: `_ingest._tcp.${DOMAIN}`, servers: [dns.address] });
    await watch.ready;
    expect(balancer.shards.map((s) => [s.id, s.weight])).toEqual([
      ['127.0.0.21:9001', 10],
      ['127.0.0.22:9002', 5],
    ]);
    const b = balancer.shards[1];

    await dns.setZone({
      hosts: { a: ['127.0.0.21'], b: ['127.0.0.22'] },
      srv: [
        { name: '_ingest._tcp', target: 'a', port: 9001, weight: 10 },
        { name: '_ingest._tcp', target: 'b', port: 9002, weight: 20 },
      ],
    });
    const change = next(watch, 'change');
    clock.advance(1_000);
    expect(await change).toEqual({ added: [], removed: [], reweighted: ['127.0.0.22:9002'] });
    expect(balancer.shards[1]).toBe(b);
    expect(balancer.shards.map((s) => s.weight)).toEqual([10, 20]);
  });

  it('an SRV target whose lookup fails keeps its last addresses (reported), and leaves only with its SRV record', async () => {
    dns = await DnsServer.start({
      hosts: { a: ['127.0.0.21'], b: ['127.0.0.22', '127.0.0.32'] },
      srv: [
        { name: '_ingest._tcp', target: 'a', port: 9001, weight: 10 },
        { name: '_ingest._tcp', target: 'b', port: 9002, weight: 5 },
      ],
    });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const changes: DnsChange[] = [];
    watch = watchDns(balancer, { srv: `_ingest._tcp.${DOMAIN}`, servers: [dns.address] });
    await watch.ready;
    watch.on('change', (c) => changes.push(c));
    const all = ['127.0.0.21:9001', '127.0.0.22:9002', '127.0.0.32:9002'];
    expect(ids(balancer)).toEqual(all);
    const kept = balancer.shards[2];

    // The SRV record still names b, but b's own lookup fails (NXDOMAIN here; a timeout or a
    // SERVFAIL of one name alike): a DNS hiccup, not a departure. b's shards stay, as the whole
    // set does when the whole resolution fails, and the failure is reported.
    await dns.setHosts({ a: ['127.0.0.21'] });
    const error = next(watch, 'error');
    clock.advance(1_000);
    expect((await error) as { code: string; hostname: string }).toMatchObject({
      code: 'ENOTFOUND',
      hostname: `b.${DOMAIN}`,
    });
    await flush();
    expect(ids(balancer)).toEqual(all);
    expect(balancer.shards[2]).toBe(kept);
    expect(balancer.shards.map((s) => s.weight)).toEqual([10, 5, 5]);
    expect(changes).toEqual([]);
    // It looks again soon, with backoff, rather than a whole TTL later.
    const retry = clock.nextTimerAt()! - clock.now();
    expect(retry).toBeLessThanOrEqual(1_000);

    // b answers again, with one address fewer: that address leaves.
    await dns.setHosts({ a: ['127.0.0.21'], b: ['127.0.0.22'] });
    let change = next(watch, 'change');
    clock.advance(retry);
    expect(await change).toEqual({ added: [], removed: ['127.0.0.32:9002'], reweighted: [] });

    // b's SRV record goes: now its shards leave.
    await dns.setZone({
      hosts: { a: ['127.0.0.21'], b: ['127.0.0.22'] },
      srv: [{ name: '_ingest._tcp', target: 'a', port: 9001, weight: 10 }],
    });
    change = next(watch, 'change');
    clock.advance(clock.nextTimerAt()! - clock.now());
    expect(await change).toEqual({ added: [], removed: ['127.0.0.22:9002'], reweighted: [] });
    expect(ids(balancer)).toEqual(['127.0.0.21:9001']);
  });

  it('stops on close: no timer left, and ready rejects when closed before the first answer', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    const early = watchDns(balancer, { hostname: NAME, port: 80, servers: [dns.address] });
    early.close();
    await expect(early.ready).rejects.toThrow(/closed before its first resolution/);
    await flush();
    watch = watchDns(balancer, { hostname: NAME, port: 80, servers: [dns.address] });
    await watch.ready;
    expect(clock.pendingTimers).toBe(1);
    watch.close();
    expect(clock.pendingTimers).toBe(0);
    expect(watch.closed).toBe(true);
  });

  it('stops by itself once the balancer is closed', async () => {
    dns = await DnsServer.start({ hosts: { ingest: ['127.0.0.11'] } });
    const clock = new ManualClock();
    const balancer = balancerOn(clock);
    watch = watchDns(balancer, { hostname: NAME, port: 80, servers: [dns.address] });
    await watch.ready;
    await balancer.close();
    await dns.setHosts({ ingest: ['127.0.0.12'] });
    const w = watch;
    clock.advance(1_000);
    for (let i = 0; i < 500 && !w.closed; i++) await new Promise((r) => setTimeout(r, 10));
    expect(w.closed).toBe(true);
    expect(ids(balancer)).toEqual(['127.0.0.11:80']);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe.skipIf(DNSMASQ === undefined)('watchDns with the transports', () => {
  let dns: DnsServer | undefined;
  let watch: DnsWatch | undefined;
  let servers: TestServer[] = [];
  let http: HttpBalancer | undefined;
  let s3: TestS3 | undefined;
  afterEach(async () => {
    watch?.close();
    await http?.close();
    await Promise.all(servers.map((s) => s.close()));
    await dns?.close();
    await s3?.close();
    watch = undefined;
    http = undefined;
    servers = [];
    dns = undefined;
    s3 = undefined;
  });

  it('feeds an HTTP balancer: requests reach the resolved shards, and stop at removed ones', async () => {
    servers = await startServers(2, (_req, res) => res.end('ok'));
    const [a, b] = servers as [TestServer, TestServer];
    const srv = (ports: number[]) => ({
      hosts: { s: ['127.0.0.1'] },
      srv: ports.map((port) => ({ name: '_ingest._tcp', target: 's', port, weight: 1 })),
    });
    dns = await DnsServer.start(srv([a.port, b.port]));
    // Built with a shard nobody listens on: the first resolution replaces it.
    http = createHttpBalancer({ origins: [`http://127.0.0.1:${await deadPort()}`] });
    watch = watchDns(http, {
      srv: `_ingest._tcp.${DOMAIN}`,
      servers: [dns.address],
      refreshMs: 100,
    });
    await watch.ready;
    expect(http.shards.map((s) => s.id).sort()).toEqual(
      [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`].sort(),
    );
    const send = (n: number) =>
      Promise.all(Array.from({ length: n }, () => http!.request({ path: '/' })));
    expect((await send(20)).every((r) => r.statusCode === 200)).toBe(true);
    expect(a.requests + b.requests).toBe(20);
    expect(a.requests).toBeGreaterThan(0);
    expect(b.requests).toBeGreaterThan(0);

    const change = next(watch, 'change');
    await dns.setZone(srv([b.port]));
    expect(await change).toMatchObject({ removed: [`127.0.0.1:${a.port}`], added: [] });
    const before = a.requests;
    const bBefore = b.requests;
    expect((await send(10)).every((r) => r.statusCode === 200)).toBe(true);
    expect(a.requests).toBe(before);
    expect(b.requests).toBe(bBefore + 10);
    expect(http.stats().shards.map((s) => s.id)).toEqual([`127.0.0.1:${b.port}`]);
  });

  it('feeds an S3 balancer through target(address, port)', async () => {
    s3 = await startS3();
    const store = s3;
    dns = await DnsServer.start({
      hosts: { s3: ['127.0.0.1'] },
      srv: [{ name: '_s3._tcp', target: 's3', port: store.port, weight: 3 }],
    });
    const s3b = createS3Balancer({ targets: [{ client: store.client(), bucket: 'bucket-b' }] });
    try {
      watch = watchDns(s3b, {
        srv: `_s3._tcp.${DOMAIN}`,
        servers: [dns.address],
        target: (address, port) => ({
          client: store.client(`http://${address}:${port}`),
          bucket: 'bucket-a',
          prefix: 'dns/',
        }),
      });
      await watch.ready;
      expect(s3b.shards.map((s) => [s.id, s.weight])).toEqual([[`127.0.0.1:${store.port}`, 3]]);
      const put = await s3b.putObject({ key: 'k1', body: 'hello' });
      expect(put).toMatchObject({ shardId: `127.0.0.1:${store.port}`, bucket: 'bucket-a' });
      expect(put.key).toBe('dns/k1');
    } finally {
      await s3b.close();
    }
  });
});
