import { afterAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { p2c } from '../../src/pickers/index.js';
import { runAll, startServers, type TestServer } from './servers.js';

describe('keep-alive pools', () => {
  let servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  it('serves 5,000 requests over 4 shards on at most connectionsPerShard connections each', async () => {
    servers = await startServers(4, (_req, res) => res.end('ok'));
    const connectionsPerShard = 4;
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker: p2c(),
      connectionsPerShard,
    });
    let ok = 0;
    await runAll(5_000, 64, async () => {
      const res = await http.request({ method: 'POST', path: '/ingest', body: 'x'.repeat(100) });
      if (res.statusCode === 200 && res.text() === 'ok') ok++;
    });
    expect(ok).toBe(5_000);
    const stats = http.stats();
    for (const [i, server] of servers.entries()) {
      expect(server.requests).toBeGreaterThan(0);
      expect(server.connections).toBeLessThanOrEqual(connectionsPerShard);
      expect(stats.shards[i]!.connections).toBeLessThanOrEqual(connectionsPerShard);
      expect(stats.shards[i]!.connections).toBeGreaterThan(0);
    }
    expect(servers.reduce((n, s) => n + s.requests, 0)).toBe(5_000);
    await http.close();
    // close() ends the idle keep-alive connections.
    for (let i = 0; i < 50 && servers.some((s) => s.open > 0); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(servers.map((s) => s.open)).toEqual([0, 0, 0, 0]);
    expect(http.stats().shards.map((s) => s.connections)).toEqual([0, 0, 0, 0]);
  });
});
