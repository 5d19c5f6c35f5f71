import { afterEach, describe, expect, it } from 'vitest';
import { type DnsWatch, watchDns } from '../../src/dns/index.js';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { deadPort, startServers, type TestServer } from '../http/servers.js';
import { startS3, type TestS3 } from '../s3/server.js';
import { DnsServer, DOMAIN, findDnsmasq, next } from './dnsmasq.js';

const DNSMASQ = findDnsmasq();
if (DNSMASQ === undefined) {
  console.log('skipped: dnsmasq not installed (apt-get install -y dnsmasq) — DNS transport tests');
}

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
