/**
 * `createHttpBalancer` composes a Balancer with the HTTP transport (no subclass): the result is a
 * `Balancer` — its methods, events and `instanceof` — with `request()`, `sendTo()` and `warm()`
 * beside them, and `HttpBalancer` still names it: `new HttpBalancer(options)` builds the same.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Balancer, createHttpBalancer, HttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { startServers, type TestServer } from './servers.js';

describe('HttpBalancer, composed', () => {
  let servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  it('is a Balancer with the HTTP calls, built by the factory or by new, and closes its pools', async () => {
    servers = await startServers(2, (_req, res) => res.end('ok'));
    const origins = servers.map((s) => s.origin);
    const made = createHttpBalancer({ origins, picker: roundRobin() });
    const built = new HttpBalancer({ origins, picker: roundRobin() });
    const plain = new Balancer({ shards: [{ id: 'a', target: 1 }] });
    for (const http of [made, built]) {
      expect(http).toBeInstanceOf(Balancer);
      expect(http).toBeInstanceOf(HttpBalancer);
      const ids: string[] = [];
      http.on('success', (event) => ids.push(event.shardId));
      for (let i = 0; i < 4; i++) expect((await http.request({ path: '/' })).text()).toBe('ok');
      expect(ids).toEqual([origins[0], origins[1], origins[0], origins[1]]);
      expect(http.stats().shards.map((s) => s.connections)).toEqual([1, 1]);
    }
    expect(plain).not.toBeInstanceOf(HttpBalancer);
    await Promise.all([made.close(), built.close(), plain.close()]);
    expect(made.stats().shards.map((s) => s.connections)).toEqual([0, 0]);
    expect(servers.map((s) => s.requests)).toEqual([4, 4]);
  });
});
