import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Picker } from '../../src/base/types.js';
import { createHttpBalancer } from '../../src/http/index.js';
import { peakEwma, roundRobin } from '../../src/pickers/index.js';
import { runAll, startServers, type TestServer } from './servers.js';

/**
 * One shard 10× slower (20 ms vs 2 ms), on real sockets. What holds however busy the machine
 * is: every request is answered exactly once, the shards' counts add up, round robin's turns are
 * exact. The share the slow shard gets under Peak EWMA depends on timing, so it is asserted on
 * the simulator's virtual time (test/pickers/slow-shard.test.ts) and measured on real sockets by
 * `npm run bench` (bench/http-throughput.bench.ts, "one shard 10× slow").
 */
describe('a slow shard, on real sockets', () => {
  let servers: TestServer[] = [];
  beforeAll(async () => {
    servers = await startServers(4, (_req, res, _body, server) => {
      const delay = server === servers[3] ? 20 : 2;
      setTimeout(() => res.end('ok'), delay);
    });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  async function counts(picker: Picker): Promise<{ counts: number[]; ok: number }> {
    for (const s of servers) s.requests = 0;
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker,
      connectionsPerShard: 32,
    });
    let ok = 0;
    await runAll(2_000, 32, async () => {
      const res = await http.request({ path: '/' });
      if (res.statusCode === 200) ok++;
    });
    await http.close();
    return { counts: servers.map((s) => s.requests), ok };
  }

  it('under peakEwma every request is answered once, and the shards’ counts add up', async () => {
    const { counts: c, ok } = await counts(peakEwma());
    expect(ok).toBe(2_000);
    expect(c.reduce((a, b) => a + b, 0)).toBe(2_000);
  });

  it('under round robin each shard gets exactly its turn (500 each)', async () => {
    const { counts: c, ok } = await counts(roundRobin());
    expect(ok).toBe(2_000);
    expect(c).toEqual([500, 500, 500, 500]);
  });
});
