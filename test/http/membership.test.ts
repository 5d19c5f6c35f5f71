import { afterAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { sleep, startServers, type TestServer } from './servers.js';

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await sleep(10);
}

describe('membership and pools', () => {
  let servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  it('opens a pool per added shard and closes it when the shard leaves', async () => {
    servers = await startServers(3, (_req, res) => res.end('ok'));
    const [a, b, c] = servers as [TestServer, TestServer, TestServer];
    const http = createHttpBalancer({ origins: [a.origin], picker: roundRobin() });
    http.addShard({ id: 'b', target: b.origin });
    for (let i = 0; i < 10; i++) await http.request({ path: '/' });
    expect(a.requests).toBe(5);
    expect(b.requests).toBe(5);
    expect(b.open).toBe(1);

    await http.removeShard('b');
    await until(() => b.open === 0);
    expect(b.open).toBe(0);
    expect(http.shards.map((s) => s.id)).toEqual([a.origin]);

    // setShards: an unchanged shard keeps its pool (no new connection), a new one gets one,
    // a dropped one is closed.
    const before = a.connections;
    await http.setShards([
      { id: a.origin, target: a.origin },
      { id: 'c', target: { origin: c.origin } },
    ]);
    for (let i = 0; i < 10; i++) await http.request({ path: '/' });
    expect(a.connections).toBe(before);
    expect(c.requests).toBe(5);
    await http.setShards([{ id: 'c', target: c.origin }]);
    await until(() => a.open === 0);
    expect(a.open).toBe(0);
    expect(http.stats().shards.map((s) => s.id)).toEqual(['c']);

    expect(() => http.addShard({ id: 'c', target: c.origin })).toThrow(/unique/);
    expect(() => http.addShard({ id: 'd', target: 'http://x/y' })).toThrow(/without a path/);
    await http.close();
    await until(() => c.open === 0);
    expect(c.open).toBe(0);
    await expect(http.request({ path: '/' })).rejects.toThrow(/closed/);
  });
});
