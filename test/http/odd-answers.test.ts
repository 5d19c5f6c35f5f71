import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, HttpError } from '../../src/http/index.js';
import { PushBackError } from '../../src/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { startServer } from './servers.js';

interface Raw {
  origin: string;
  requests: number;
  close(): Promise<void>;
}

/** A raw TCP server writing `answer` after each request head (and body, when `waitBody`). */
async function raw(answer: (socket: net.Socket) => void): Promise<Raw> {
  const sockets = new Set<net.Socket>();
  const state = { origin: '', requests: 0, close: async () => {} };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      while (buf.includes('\r\n\r\n')) {
        const head = buf.slice(0, buf.indexOf('\r\n\r\n'));
        const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        const total = head.length + 4 + len;
        if (buf.length < total) return;
        buf = buf.slice(total);
        state.requests++;
        answer(socket);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  state.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return state;
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f()));
});

async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (e) {
    return e;
  }
}

describe('odd and hostile HTTP answers', () => {
  it('a Content-Length the body never reaches: a GET retries elsewhere, a POST is sent once', async () => {
    const liar = await raw((s) => {
      s.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort');
      setTimeout(() => s.end(), 20);
    });
    const good = await startServer((_req, res) => res.end('fine'));
    cleanup.push(liar.close, good.close);
    const http = createHttpBalancer({
      origins: [liar.origin, good.origin],
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 0, maxMs: 1 }, budget: false },
      timeoutMs: 5_000,
    });
    const get = (await outcome(http.request({ path: '/a' }))) as {
      statusCode?: number;
      text?: () => string;
    };
    expect(get.statusCode).toBe(200);
    expect(get.text?.()).toBe('fine');
    await http.close();
    const http2 = createHttpBalancer({
      origins: [liar.origin, good.origin],
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 0, maxMs: 1 }, budget: false },
      timeoutMs: 5_000,
    });
    const before = good.requests;
    const post = await outcome(http2.request({ method: 'POST', path: '/a', body: 'x' }));
    await http2.close();
    expect(post).toBeInstanceOf(Error);
    expect(good.requests).toBe(before);
  });

  it('redirects are handed over, not followed; 204 and 304 resolve with an empty body', async () => {
    let n = 0;
    const s = await raw((sock) => {
      n++;
      if (n === 1)
        sock.write(
          'HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:9/evil\r\ncontent-length: 0\r\n\r\n',
        );
      else if (n === 2) sock.write('HTTP/1.1 204 No Content\r\n\r\n');
      else sock.write('HTTP/1.1 304 Not Modified\r\netag: "x"\r\n\r\n');
    });
    cleanup.push(s.close);
    const http = createHttpBalancer({ origins: [s.origin], timeoutMs: 5_000 });
    const r1 = await http.request({ path: '/r' });
    const r2 = await http.request({ path: '/r' });
    const r3 = await http.request({ path: '/r' });
    await http.close();
    expect([r1.statusCode, r2.statusCode, r3.statusCode]).toEqual([302, 204, 304]);
    expect(r2.body.length + r3.body.length).toBe(0);
    expect(s.requests).toBe(3);
  });

  it.each([
    ['negative', '-5', 1_000],
    ['fraction', '1.5', 1_000],
    ['huge digits', '9'.repeat(400), 60_000],
    ['far-future date', 'Fri, 31 Dec 9999 23:59:59 GMT', 60_000],
    ['past date', 'Thu, 01 Jan 1970 00:00:00 GMT', 0],
    ['garbage', 'soon, maybe', 1_000],
  ])('429 with a Retry-After that is %s: a bounded push-back', async (_name, value, ms) => {
    const s = await startServer((_req, res) => {
      res.statusCode = 429;
      res.setHeader('retry-after', value);
      res.end();
    });
    cleanup.push(s.close);
    const http = createHttpBalancer({ origins: [s.origin], retry: false, timeoutMs: 5_000 });
    const e = await outcome(http.request({ path: '/x' }));
    await http.close({ drain: false });
    expect(e).toBeInstanceOf(PushBackError);
    expect((e as PushBackError).retryAfterMs).toBe(ms);
  });

  it('503 with a negative Retry-After is a plain retryable HttpError', async () => {
    const s = await startServer((_req, res) => {
      res.statusCode = 503;
      res.setHeader('retry-after', '-1');
      res.end();
    });
    cleanup.push(s.close);
    const http = createHttpBalancer({ origins: [s.origin], retry: false, timeoutMs: 5_000 });
    const e = await outcome(http.request({ path: '/x' }));
    await http.close({ drain: false });
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).retryable).toBe(true);
  });

  it('a 4xx on a POST declared idempotent is still not retried', async () => {
    const a = await startServer((_req, res) => {
      res.statusCode = 409;
      res.end('conflict');
    });
    const b = await startServer((_req, res) => res.end('ok'));
    cleanup.push(a.close, b.close);
    const http = createHttpBalancer({
      origins: [a.origin, b.origin],
      picker: roundRobin(),
      timeoutMs: 5_000,
    });
    const e = await outcome(
      http.request({ method: 'POST', path: '/x', body: 'y', idempotent: true }),
    );
    await http.close();
    expect((e as HttpError).statusCode).toBe(409);
    expect(a.requests + b.requests).toBe(1);
  });
});
