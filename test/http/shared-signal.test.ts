/**
 * (real sockets) `request()`s on one caller signal, one running and the rest waiting in
 * the balancer for the shard's only slot. The abort must not hand the waiting ones to the pool:
 * a waiting request's signal aborted, so it "leaves the queue" and is never sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { type Handler, startServer, type TestServer } from './servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function until(done: () => boolean, turns = 300): Promise<boolean> {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  return done();
}

describe('request()s sharing one signal, aborted while most wait for a slot', () => {
  it('no waiting request reaches the pool, opens a connection or arrives at the server', async () => {
    const handler: Handler = () => {}; // never answers
    const server = await startServer(handler);
    servers.push(server);
    const http = createHttpBalancer({
      origins: [server.origin],
      connectionsPerShard: 1,
      retry: false,
    });
    const controller = new AbortController();
    const picks: number[] = [];
    http.on('pick', ({ attempt }) => picks.push(attempt));
    const pending = Array.from({ length: 10 }, (_, i) =>
      http
        .request({ method: 'POST', path: `/r${i}`, body: 'x', signal: controller.signal })
        .catch((e) => e),
    );
    expect(await until(() => server.requests === 1)).toBe(true);
    expect(http.stats()).toMatchObject({ inFlight: 1, queued: 9 });

    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect(await Promise.all(pending)).toEqual(pending.map(() => reason));
    await new Promise((r) => setTimeout(r, 100));
    // Only the one running request was ever picked and sent.
    expect({
      picks: picks.length,
      shardRequests: http.stats().shards[0]!.requests,
      serverRequests: server.requests,
      connections: server.connections,
    }).toMatchObject({ picks: 1, shardRequests: 1, serverRequests: 1 });
    // undici reconnects once after the aborted request destroyed its socket (a raw Pool does the
    // same); each waiting request sent to the pool would have opened one more (10 before the fix).
    expect(server.connections).toBeLessThanOrEqual(2);
    await http.close();
  });
});
