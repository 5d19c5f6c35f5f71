import type http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { sleep, startServer, startServers, type TestServer } from './servers.js';

async function until(check: () => boolean, n = 300): Promise<boolean> {
  for (let i = 0; i < n && !check(); i++) await sleep(10);
  return check();
}

/** A server whose responses are held until `release()`. */
async function holding() {
  const held: http.ServerResponse[] = [];
  const server = await startServer((req, res) => {
    if (req.url === '/hold') held.push(res);
    else res.end(`ok ${req.url}`);
  });
  return {
    server,
    held,
    release: () => {
      for (const r of held.splice(0)) r.end('released');
    },
  };
}

describe('HTTP membership changes', () => {
  let servers: TestServer[] = [];
  let balancers: HttpBalancer[] = [];
  afterEach(async () => {
    await Promise.all(balancers.map((b) => b.close({ drain: false })));
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
    balancers = [];
  });

  it('removeShard(drain) while a request is held: it completes, then the pool closes', async () => {
    const h = await holding();
    const [other] = await startServers(1, (_q, s) => s.end('ok'));
    servers = [h.server, other!];
    const b = createHttpBalancer({ origins: [h.server.origin], picker: roundRobin() });
    balancers.push(b);
    const pending = b.request({ path: '/hold' });
    expect(await until(() => h.held.length === 1)).toBe(true);
    b.addShard({ id: 'other', target: other!.origin });
    let removed = false;
    const removal = b.removeShard(h.server.origin).then(() => {
      removed = true;
    });
    await sleep(50);
    expect(removed).toBe(false);
    expect(h.server.open).toBe(1);
    // New requests go elsewhere.
    for (let i = 0; i < 5; i++) expect((await b.request({ path: '/' })).shardId).toBe('other');
    h.release();
    const res = await pending;
    expect(res.statusCode).toBe(200);
    expect(res.text()).toBe('released');
    await removal;
    expect(await until(() => h.server.open === 0)).toBe(true);
    expect(b.stats().shards.map((s) => s.id)).toEqual(['other']);
  });

  it('re-adding a removed id while the old one drains: the new shard works, the old pool closes after its call', async () => {
    const h = await holding();
    servers = [h.server];
    const b = createHttpBalancer({ shards: [{ id: 's', target: h.server.origin }] });
    balancers.push(b);
    const pending = b.request({ path: '/hold' });
    expect(await until(() => h.held.length === 1)).toBe(true);
    const removal = b.removeShard('s');
    b.addShard({ id: 's', target: h.server.origin });
    const r = await b.request({ path: '/x' });
    expect(r.statusCode).toBe(200);
    expect(h.server.open).toBe(2); // the old pool's held socket + the new pool's
    h.release();
    expect((await pending).statusCode).toBe(200);
    await removal;
    expect(await until(() => h.server.open === 1)).toBe(true);
    // The new shard still works after the old pool closed.
    for (let i = 0; i < 3; i++) {
      expect((await b.request({ path: '/y' })).statusCode).toBe(200);
    }
    expect(b.stats().shards).toHaveLength(1);
  });

  it('setShards: same id, another origin, while a call is held on the old one', async () => {
    const h = await holding();
    const [n] = await startServers(1, (_q, s) => s.end('new'));
    servers = [h.server, n!];
    const b = createHttpBalancer({ shards: [{ id: 's', target: h.server.origin }] });
    balancers.push(b);
    const pending = b.request({ path: '/hold' });
    expect(await until(() => h.held.length === 1)).toBe(true);
    const set = b.setShards([{ id: 's', target: n!.origin }]);
    expect((await b.request({ path: '/' })).text()).toBe('new');
    expect(b.shards[0]!.target.origin).toBe(n!.origin);
    h.release();
    expect((await pending).text()).toBe('released');
    await set;
    expect(await until(() => h.server.open === 0)).toBe(true);
    expect((await b.request({ path: '/' })).text()).toBe('new');
  });

  it('two ids with one origin have their own pools: removing one leaves the other working', async () => {
    const [a] = await startServers(1, (_q, s) => s.end('ok'));
    servers = [a!];
    const b = createHttpBalancer({
      shards: [
        { id: 'x', target: a!.origin },
        { id: 'y', target: a!.origin },
      ],
      picker: roundRobin(),
    });
    balancers.push(b);
    for (let i = 0; i < 4; i++) await b.request({ path: '/' });
    await b.removeShard('x');
    for (let i = 0; i < 4; i++) expect((await b.request({ path: '/' })).shardId).toBe('y');
  });

  it('removeShard without drain: the held call is retried elsewhere, the pool destroyed', async () => {
    const h = await holding();
    const [o] = await startServers(1, (_q, s) => s.end('other'));
    servers = [h.server, o!];
    const b = createHttpBalancer({ shards: [{ id: 'h', target: h.server.origin }] });
    balancers.push(b);
    const pending = b.request({ path: '/hold' });
    expect(await until(() => h.held.length === 1)).toBe(true);
    b.addShard({ id: 'o', target: o!.origin });
    await b.removeShard('h', { drain: false });
    const res = await pending;
    expect(res.shardId).toBe('o');
    expect(await until(() => h.server.open === 0)).toBe(true);
  });

  it('warm connections of a removed shard are closed', async () => {
    const [a, c] = await startServers(2, (_q, s) => s.end('ok'));
    servers = [a!, c!];
    const b = createHttpBalancer({
      shards: [{ id: 'a', target: a!.origin }],
      connectionsPerShard: 2,
      warm: 2,
    });
    balancers.push(b);
    b.addShard({ id: 'c', target: c!.origin });
    await b.warm();
    expect(await until(() => c!.open === 2)).toBe(true);
    await b.removeShard('c');
    expect(await until(() => c!.open === 0)).toBe(true);
    // Re-added: warmed again and works.
    b.addShard({ id: 'c', target: c!.origin });
    await b.warm();
    expect((await b.request({ path: '/', require: undefined })).statusCode).toBe(200);
  });

  it('a request timing out on a draining shard ends the drain and closes the pool', async () => {
    const h = await holding();
    servers = [h.server];
    const b = createHttpBalancer({
      shards: [{ id: 'h', target: h.server.origin }],
      retry: false,
    });
    balancers.push(b);
    const pending = b.request({ path: '/hold', timeoutMs: 200 }).catch((e: Error) => e);
    expect(await until(() => h.held.length === 1)).toBe(true);
    b.addShard({ id: 'h2', target: h.server.origin });
    await b.removeShard('h');
    const err = await pending;
    expect(err).toBeInstanceOf(Error);
    expect(await until(() => h.server.open === 0)).toBe(true);
    h.release();
  });
});
