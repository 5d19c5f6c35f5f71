/**
 * examples/wrap-fetch.ts against real local object stores: the wrapped upload spreads every
 * object across the shards, and its errors keep their meaning (4xx not retried, 5xx retried).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { agent, main, startLocalStores, upload } from '../../examples/wrap-fetch.js';
import { Balancer, roundRobin } from '../../src/index.js';

describe('examples/wrap-fetch', () => {
  afterAll(async () => {
    await agent.close();
  });

  it('uploads every object once, spread over the shards', async () => {
    const local = await startLocalStores(3);
    try {
      const { perShard, failed, stats } = await main({ origins: local.origins, count: 600 });
      expect(failed).toEqual([]);
      const names = local.stores.flatMap((store) => [...store.keys()]);
      expect(names).toHaveLength(600);
      expect(new Set(names).size).toBe(600);
      expect(
        local.stores[0]!.get('object-5.json') ??
          local.stores[1]!.get('object-5.json') ??
          local.stores[2]!.get('object-5.json'),
      ).toBe('{"i":5}');
      expect(Object.values(perShard).reduce((a, b) => a + b, 0)).toBe(600);
      for (const store of local.stores) expect(store.size).toBeGreaterThan(0);
      expect(stats.completed).toBe(600);
    } finally {
      await local.close();
    }
  });

  it('the wrapped function keeps upload’s errors: a 5xx shard is retried elsewhere, a 4xx is not', async () => {
    const local = await startLocalStores(1);
    let brokenCalls = 0;
    const broken = http.createServer((req, res) => {
      brokenCalls++;
      req.resume();
      req.on('end', () => {
        res.statusCode = req.url?.includes('forbidden') ? 403 : 500;
        res.end();
      });
    });
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    const brokenOrigin = `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
    const balancer = new Balancer<string>({
      shards: [
        { id: 'broken', target: brokenOrigin },
        { id: 'ok', target: local.origins[0]! },
      ],
      picker: roundRobin(), // every other first attempt goes to `broken`
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 } },
    });
    const put = balancer.wrap(
      (shard, { signal }, name: string, body: string) => upload(shard.target, name, body, signal),
      { idempotent: true },
    );
    try {
      for (let i = 0; i < 20; i++) await put(`n-${i}`, 'x'); // 500s on `broken` go to `ok`
      expect(local.stores[0]!.size).toBe(20);
      expect(brokenCalls).toBeGreaterThan(0);
      // A 403 from the only shard left is the request's fault: one call, the error as thrown.
      await balancer.removeShard('ok');
      const error = await put('forbidden', 'x').catch((e: unknown) => e);
      expect((error as { status: number }).status).toBe(403);
    } finally {
      await balancer.close();
      await local.close();
      broken.closeAllConnections();
      await new Promise<void>((resolve) => broken.close(() => resolve()));
    }
  });
});
