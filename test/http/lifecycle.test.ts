/**
 * Attacks on the HTTP transport's lifecycle: pools follow membership and close().
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { BalancerClosedError } from '../../src/index.js';
import { sleep, startServers, type TestServer } from './servers.js';

async function until(check: () => boolean, n = 200): Promise<boolean> {
  for (let i = 0; i < n && !check(); i++) await sleep(10);
  return check();
}

describe('HTTP lifecycle', () => {
  let servers: TestServer[] = [];
  let balancers: HttpBalancer[] = [];
  afterEach(async () => {
    await Promise.all(balancers.map((b) => b.close({ drain: false })));
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
    balancers = [];
  });

  it('a shard added after close() opens no connection that close() never releases', async () => {
    const [a, late] = await startServers(2, (_q, s) => s.end('ok'));
    servers = [a!, late!];
    const b = createHttpBalancer({ origins: [a!.origin], warm: 1 });
    balancers.push(b);
    await b.warm();
    await b.close();
    expect(await until(() => a!.open === 0)).toBe(true);
    let threw: unknown;
    try {
      b.addShard({ id: 'late', target: late!.origin });
    } catch (error) {
      threw = error;
    }
    // Give a warm connection time to open (bounded: 1 s).
    await until(() => late!.open > 0, 100);
    // The closed balancer refuses the shard, and holds nothing open for it.
    expect(threw).toBeInstanceOf(BalancerClosedError);
    expect(late!.open).toBe(0);
    expect(b.shards.map((s) => s.id)).not.toContain('late');
    await expect(b.setShards([{ id: 'late', target: late!.origin }])).rejects.toBeInstanceOf(
      BalancerClosedError,
    );
  });

  it('close() twice: the second resolves only once the pools are released, like the first', async () => {
    const [a] = await startServers(1, (_q, s) => s.end('ok'));
    servers = [a!];
    const b = createHttpBalancer({ origins: [a!.origin] });
    balancers.push(b);
    expect((await b.request({ path: '/' })).statusCode).toBe(200);
    expect(a!.open).toBe(1);
    const order: string[] = [];
    const first = b.close().then(() => order.push('first'));
    const second = b.close().then(() => order.push('second'));
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
  });
});
