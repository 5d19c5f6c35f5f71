/**
 * The life of one request on real sockets: every way its attempt can end before it does aborts
 * it (the connection is closed, not left to finish), and a response is read whole whatever shape
 * it arrives in (chunks, 1xx first, repeated headers, an empty body).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TimeoutError } from '../../src/base/errors.js';
import { createHttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { type Handler, startServer, type TestServer } from './servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(handler: Handler) {
  const server = await startServer(handler);
  servers.push(server);
  return server;
}

/** Marks, per request path, whether the connection that carried the request has closed. */
function closedByPath(): {
  closed: Map<string, boolean>;
  track(req: { url?: string; socket: { once(e: 'close', f: () => void): unknown } }): void;
} {
  const closed = new Map<string, boolean>();
  return {
    closed,
    track(req) {
      const path = req.url ?? '';
      closed.set(path, false);
      req.socket.once('close', () => closed.set(path, true));
    },
  };
}

/** Waits, bounded in turns, until `done()` holds; returns whether it did. */
async function until(done: () => boolean, turns = 500): Promise<boolean> {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  return done();
}

describe('a request whose attempt ends first is aborted', () => {
  it('by the run timeout: the run rejects and its connection is closed', async () => {
    const sockets = closedByPath();
    const server = await serve((req) => sockets.track(req)); // never answers
    // Virtual time: the timeout trips once the request is known to have reached the shard.
    const clock = new ManualClock();
    const http = createHttpBalancer({ origins: [server.origin], retry: false, clock });
    const pending = http.request({ path: '/hang', timeoutMs: 50 }).catch((e) => e);
    expect(await until(() => server.requests === 1)).toBe(true);
    clock.advance(50);
    expect(await pending).toBeInstanceOf(TimeoutError);
    expect(await until(() => sockets.closed.get('/hang') === true)).toBe(true);
    await http.close();
  });

  it("by the caller's signal: the run rejects with its reason and the connection is closed", async () => {
    const sockets = closedByPath();
    const server = await serve((req) => sockets.track(req));
    const http = createHttpBalancer({ origins: [server.origin], retry: false });
    const controller = new AbortController();
    const pending = http.request({ path: '/hang', signal: controller.signal }).catch((e) => e);
    expect(await until(() => server.requests === 1)).toBe(true);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect(await pending).toBe(reason);
    expect(await until(() => sockets.closed.get('/hang') === true)).toBe(true);
    await http.close();
  });

  it('while it waits in the pool for a connection: it is never sent', async () => {
    const held: Array<() => void> = [];
    const sockets = closedByPath();
    const server = await serve((req, res) => {
      sockets.track(req);
      held.push(() => res.end('first'));
    });
    const clock = new ManualClock();
    const http = createHttpBalancer({
      origins: [server.origin],
      connectionsPerShard: 1,
      maxInFlightPerShard: 2, // the second request waits in the pool, behind the first
      retry: false,
      clock,
    });
    const first = http.request({ path: '/first' });
    expect(await until(() => held.length === 1)).toBe(true);
    const second = http.request({ path: '/second', timeoutMs: 30 }).catch((e) => e);
    clock.advance(30);
    expect(await second).toBeInstanceOf(TimeoutError);
    held[0]!();
    expect((await first).text()).toBe('first');
    // The aborted second request closes the connection it was given instead of using it.
    expect(await until(() => sockets.closed.get('/first') === true)).toBe(true);
    expect(server.requests).toBe(1);
    await http.close();
  });

  it('by the attempt settling while another request of it still runs (sendTo)', async () => {
    const sockets = closedByPath();
    const server = await serve((req, res) => {
      sockets.track(req);
      if (req.url === '/fast') res.end('fast');
    });
    const http = createHttpBalancer({ origins: [server.origin] });
    let late: unknown;
    const value = await http.run(async (shard, ctx) => {
      http.sendTo(shard, { path: '/hang' }, ctx).then(
        () => {
          late = 'resolved';
        },
        (e) => {
          late = e;
        },
      );
      return (await http.sendTo(shard, { path: '/fast' }, ctx)).text();
    });
    expect(value).toBe('fast');
    expect(await until(() => late !== undefined)).toBe(true);
    expect((late as Error).name).toBe('AbortError');
    expect(await until(() => sockets.closed.get('/hang') === true)).toBe(true);
    expect(sockets.closed.get('/fast')).toBe(false); // kept alive for the next request
    await http.close();
  });
});

describe('a response is read whole', () => {
  it('from many chunks, after a 1xx, with repeated headers kept as a list', async () => {
    const parts = [Buffer.alloc(70_000, 97), Buffer.alloc(5, 98), Buffer.alloc(100_000, 99)];
    const server = await serve((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      let i = 0;
      const next = () => {
        if (i === parts.length) {
          res.end();
          return;
        }
        res.write(parts[i++]);
        setImmediate(next);
      };
      next();
    });
    const http = createHttpBalancer({ origins: [server.origin] });
    const res = await http.request({ path: '/chunks' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.body.equals(Buffer.concat(parts))).toBe(true);
    await http.close();
  });

  it('empty: a zero-length body', async () => {
    const server = await serve((_req, res) => {
      res.statusCode = 204;
      res.end();
    });
    const http = createHttpBalancer({ origins: [server.origin] });
    const res = await http.request({ method: 'DELETE', path: '/x' });
    expect(res.statusCode).toBe(204);
    expect(res.body.length).toBe(0);
    expect(res.text()).toBe('');
    await http.close();
  });

  it('for HEAD: the length a HEAD answer declares is not a body over the limit', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('content-length', String(10 * 1024 * 1024));
      res.end();
    });
    const http = createHttpBalancer({ origins: [server.origin], bodyLimitBytes: 1024 });
    const res = await http.request({ method: 'HEAD', path: '/big' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe(String(10 * 1024 * 1024));
    expect(res.body.length).toBe(0);
    await http.close();
  });

  it('from a shard removed while the request ran: its load header is still taken', async () => {
    const held: Array<() => void> = [];
    const server = await serve((_req, res) => {
      res.setHeader('x-shard-load', '3');
      held.push(() => res.end('late'));
    });
    const other = await serve((_req, res) => res.end('other'));
    // Round robin starts at the first shard: the request goes to `server`.
    const http = createHttpBalancer({
      origins: [server.origin, other.origin],
      picker: roundRobin(),
    });
    const pending = http.request({ path: '/' });
    expect(await until(() => held.length === 1)).toBe(true);
    const removed = http.removeShard(server.origin);
    held[0]!();
    const res = await pending;
    expect(res.text()).toBe('late');
    expect(res.shardId).toBe(server.origin);
    await removed;
    expect(other.requests).toBe(0);
    await http.close();
  });
});
