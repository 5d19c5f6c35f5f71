import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { peakEwma, roundRobin } from '../../src/pickers/index.js';
import type { Picker } from '../../src/types.js';
import { runAll, startServers, type TestServer } from './servers.js';

/**
 * One shard 10× slower (20 ms vs 2 ms). Caps are set high (32 per shard) so they never bind:
 * the share is the picker's doing, not the in-flight cap's.
 *
 * Bound for Peak EWMA: at concurrency 32 the three fast shards hold ~10 calls each, cost
 * ≈ 2–3 ms × 11 ≈ 25–35; the slow shard costs ≈ 21 ms × (k + 1), so it wins a pair only while it
 * holds 0–1 calls: ~1 in flight ≈ 50 req/s against ~3,000 req/s per fast shard — about 1–2 %.
 * We assert < 10 %, a margin of 5× for timer noise on a loaded machine.
 */
describe('a slow shard', () => {
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

  async function share(picker: Picker): Promise<number[]> {
    for (const s of servers) s.requests = 0;
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker,
      connectionsPerShard: 32,
    });
    await runAll(2_000, 32, async () => {
      await http.request({ path: '/' });
    });
    await http.close();
    const total = servers.reduce((n, s) => n + s.requests, 0);
    expect(total).toBe(2_000);
    return servers.map((s) => s.requests / total);
  }

  it('gets a small share under peakEwma (< 10 %)', async () => {
    const shares = await share(peakEwma());
    expect(shares[3]).toBeLessThan(0.1);
  });

  it('gets its 25 % ± 1 % under round robin', async () => {
    const shares = await share(roundRobin());
    for (const s of shares) expect(Math.abs(s - 0.25)).toBeLessThanOrEqual(0.01);
  });
});
