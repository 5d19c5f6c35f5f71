import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { isShardwiseError, RetriesExhaustedError, type RouteEvent } from '../../src/index.js';
import { startServers, type TestServer } from './servers.js';

/** Routing rules over real HTTP shards: an `eu` run never reaches a `us` server, even when every `eu` shard is down. */
describe('routing rules on real HTTP shards', () => {
  let servers: TestServer[] = [];
  let http: HttpBalancer | undefined;
  afterEach(async () => {
    await http?.close({ drain: false });
    await Promise.all(servers.map((s) => s.close()));
  });

  it('rejects an eu run with the rule in the message while every eu shard is down, reaching no other shard', async () => {
    servers = await startServers(4, (_req, res) => res.end('ok'));
    const regions = ['eu', 'eu', 'us', 'us'];
    http = createHttpBalancer({
      shards: servers.map((server, i) => ({
        id: `s${i}`,
        target: server.origin,
        labels: { region: regions[i]! },
      })),
      retry: { attempts: 4, backoff: { baseMs: 1, maxMs: 5 } },
    });
    const routes: RouteEvent[] = [];
    http.on('route', (event) => routes.push(event));
    // While eu is up, eu runs land on eu servers only.
    for (let i = 0; i < 20; i++) {
      const res = await http.request({
        method: 'POST',
        path: '/x',
        body: `${i}`,
        idempotent: true,
        require: { region: 'eu' },
      });
      expect(['s0', 's1']).toContain(res.shardId);
    }
    const usBefore = servers[2]!.requests + servers[3]!.requests;
    expect(usBefore).toBe(0);
    // Every eu shard goes down (connection refused from now on).
    await servers[0]!.kill();
    await servers[1]!.kill();
    const error = await http
      .request({ method: 'PUT', path: '/record/1', body: 'x', require: { region: 'eu' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(isShardwiseError(error, 'SHARDWISE_RETRIES_EXHAUSTED')).toBe(true);
    expect((error as Error).message).toContain('region=eu');
    for (const attempt of (error as RetriesExhaustedError).attempts)
      expect(['s0', 's1']).toContain(attempt.shardId);
    expect(servers[2]!.requests + servers[3]!.requests).toBe(0);
    expect(routes.every((r) => r.shardId === 's0' || r.shardId === 's1')).toBe(true);
  });
});
