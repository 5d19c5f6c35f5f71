import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import {
  createHttpBalancer,
  HTTP_DEFAULTS,
  type HttpBalancerOptions,
} from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { deadPort, type Handler, startServer, startServers, type TestServer } from './servers.js';

const ok: Handler = (_req, res) => res.end('ok');

/** Waits (bounded) until `check` holds: a server sees a connection a moment after the client. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function configError(options: Partial<HttpBalancerOptions>): ConfigError {
  try {
    createHttpBalancer({ origins: ['http://127.0.0.1:1'], ...options });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('connection tuning', () => {
  let servers: TestServer[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
  });

  it('documents its defaults', () => {
    expect(HTTP_DEFAULTS).toMatchObject({
      warm: 0,
      noDelay: true,
      keepAliveProbeMs: 30_000,
      maxRequestsPerConnection: 0,
      maxConnectionAgeMs: 300_000,
    });
  });

  it('validates the options, naming the field', () => {
    expect(configError({ connectionsPerShard: 2, warm: 3 }).message).toBe(
      '`warm` must be at most `connectionsPerShard` (2): a pool opens no more, got 3 (number)',
    );
    expect(configError({ warm: -1 }).field).toBe('warm');
    expect(configError({ warm: 1.5 }).field).toBe('warm');
    expect(configError({ noDelay: 'yes' as never }).field).toBe('noDelay');
    expect(configError({ keepAliveProbeMs: -1 }).field).toBe('keepAliveProbeMs');
    expect(configError({ maxRequestsPerConnection: 2.5 }).field).toBe('maxRequestsPerConnection');
    expect(configError({ maxConnectionAgeMs: Number.NaN }).field).toBe('maxConnectionAgeMs');
  });

  it('warm: 2 opens 2 connections per shard before any request; the first requests open none', async () => {
    servers = await startServers(2, ok);
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker: roundRobin(),
      connectionsPerShard: 4,
      warm: 2,
    });
    expect(await http.warm()).toEqual({ opened: 4, failed: 0 });
    await until(() => servers.every((s) => s.connections >= 2), '2 connections per shard');
    // Connections, and no request: warming sends nothing to the application.
    expect(servers.map((s) => [s.connections, s.requests])).toEqual([
      [2, 0],
      [2, 0],
    ]);
    expect(http.stats().shards.map((s) => s.connections)).toEqual([2, 2]);
    // warm() again opens nothing more.
    expect(await http.warm()).toEqual({ opened: 0, failed: 0 });

    // The first requests, two at once per shard (round robin), ride the warm connections.
    const first = await Promise.all(Array.from({ length: 4 }, () => http.request({ path: '/' })));
    expect(first.map((r) => r.text())).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(servers.map((s) => [s.connections, s.requests])).toEqual([
      [2, 2],
      [2, 2],
    ]);

    // A shard added later is warmed too.
    const late = await startServer(ok);
    servers.push(late);
    http.addShard({ id: 'late', target: late.origin });
    expect(await http.warm()).toEqual({ opened: 2, failed: 0 });
    await until(() => late.connections >= 2, 'the late shard warmed');
    expect([late.connections, late.requests]).toEqual([2, 0]);

    await http.close();
    await until(() => servers.every((s) => s.open === 0), 'every connection closed');
  });

  it('counts, never throws, the warm connections a dead shard cannot open', async () => {
    servers = [await startServer(ok)];
    const dead = `http://127.0.0.1:${await deadPort()}`;
    const http = createHttpBalancer({ origins: [servers[0]!.origin, dead], warm: 2 });
    expect(await http.warm()).toEqual({ opened: 2, failed: 2 });
    await http.close();
  });

  it('maxRequestsPerConnection: a connection carries at most N requests, then a new one opens', async () => {
    const perSocket = new Map<unknown, number>();
    servers = [
      await startServer((req, res) => {
        perSocket.set(req.socket, (perSocket.get(req.socket) ?? 0) + 1);
        res.end('ok');
      }),
    ];
    const http = createHttpBalancer({
      origins: [servers[0]!.origin],
      connectionsPerShard: 1,
      maxRequestsPerConnection: 3,
    });
    for (let i = 0; i < 9; i++) await http.request({ path: '/' });
    expect([...perSocket.values()]).toEqual([3, 3, 3]);
    expect(servers[0]!.connections).toBe(3);
    await http.close();

    // 1: a connection per request.
    perSocket.clear();
    const single = createHttpBalancer({
      origins: [servers[0]!.origin],
      connectionsPerShard: 1,
      maxRequestsPerConnection: 1,
    });
    for (let i = 0; i < 3; i++) await single.request({ path: '/' });
    expect([...perSocket.values()]).toEqual([1, 1, 1]);
    await single.close();
  });

  it('maxConnectionAgeMs: an old connection is asked to close on its next request, then replaced', async () => {
    const seen: { socket: unknown; connection: string | undefined }[] = [];
    servers = [
      await startServer((req, res) => {
        seen.push({ socket: req.socket, connection: req.headers.connection });
        res.end('ok');
      }),
    ];
    const clock = new ManualClock();
    const http = createHttpBalancer({
      origins: [servers[0]!.origin],
      connectionsPerShard: 1,
      maxConnectionAgeMs: 1_000,
      clock,
    });
    await http.request({ path: '/' });
    clock.advance(999);
    await http.request({ path: '/' }); // 999 ms old: kept
    clock.advance(1);
    await http.request({ path: '/' }); // 1 000 ms old: this one closes it
    await http.request({ path: '/' }); // a new connection
    await http.request({ path: '/' });
    expect(seen.map((s) => s.connection)).toEqual([
      'keep-alive',
      'keep-alive',
      'close',
      'keep-alive',
      'keep-alive',
    ]);
    expect(new Set(seen.slice(0, 3).map((s) => s.socket)).size).toBe(1);
    expect(seen[3]!.socket).not.toBe(seen[0]!.socket);
    expect(seen[4]!.socket).toBe(seen[3]!.socket);
    expect(servers[0]!.connections).toBe(2);
    await http.close();
  });

  it('noDelay and keepAliveProbeMs reach the client socket', async () => {
    // Not observable from the server (TCP_NODELAY and keep-alive probes are the sender's
    // settings): the client's calls on its sockets are recorded instead.
    const noDelay: [net.Socket, boolean | undefined][] = [];
    const keepAlive: [net.Socket, boolean | undefined, number | undefined][] = [];
    const setNoDelay = net.Socket.prototype.setNoDelay;
    const setKeepAlive = net.Socket.prototype.setKeepAlive;
    vi.spyOn(net.Socket.prototype, 'setNoDelay').mockImplementation(function (
      this: net.Socket,
      enable?: boolean,
    ) {
      noDelay.push([this, enable]);
      return setNoDelay.call(this, enable);
    });
    vi.spyOn(net.Socket.prototype, 'setKeepAlive').mockImplementation(function (
      this: net.Socket,
      enable?: boolean,
      delay?: number,
    ) {
      keepAlive.push([this, enable, delay]);
      return setKeepAlive.call(this, enable, delay);
    });
    servers = await startServers(3, ok);
    const [a, b, c] = servers as [TestServer, TestServer, TestServer];
    const clientSide = (server: TestServer) => (socket: net.Socket) =>
      socket.remotePort === server.port;
    const lastNoDelay = (server: TestServer) =>
      noDelay.filter(([s]) => clientSide(server)(s)).at(-1)?.[1];
    const keepAliveOf = (server: TestServer) =>
      keepAlive.filter(([s]) => clientSide(server)(s)).map(([, on, delay]) => [on, delay]);

    const defaults = createHttpBalancer({ origins: [a.origin] });
    const tuned = createHttpBalancer({
      origins: [b.origin],
      noDelay: false,
      keepAliveProbeMs: 12_345,
      warm: 1,
    });
    const off = createHttpBalancer({ origins: [c.origin], keepAliveProbeMs: 0 });
    await tuned.warm();
    for (const http of [defaults, tuned, off]) await http.request({ path: '/' });

    expect(lastNoDelay(a)).toBe(true);
    expect(keepAliveOf(a)).toEqual([[true, 30_000]]);
    expect(lastNoDelay(b)).toBe(false);
    expect(keepAliveOf(b)).toEqual([[true, 12_345]]);
    expect(b.connections).toBe(1); // the warm connection served the request
    expect(lastNoDelay(c)).toBe(true);
    expect(keepAliveOf(c)).toEqual([]);
    await Promise.all([defaults.close(), tuned.close(), off.close()]);
  });
});
