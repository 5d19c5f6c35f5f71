/**
 * Maglev `resize()` on a live balancer gives keys new homes. The balancer keeps using the home it
 * computed before the resize for runs already under way: a strict run waiting in its old home's
 * line runs there (not on its key's home), and a spill run's retry on its key's new home is
 * counted as a displacement from the old one.
 */
import { describe, expect, it } from 'vitest';
import { type Balancer, consistentHash } from '../../../src/index.js';
import { failAfter, makeBalancer, recorded, resolveAfter, tick } from '../../helpers.js';

const IDS = ['a', 'b', 'c', 'd'];

function make(picker: ReturnType<typeof consistentHash>, cap = 32) {
  const { clock, balancer } = makeBalancer({
    shards: IDS.map((id) => ({ id, target: id })),
    picker,
    maxInFlightPerShard: cap,
  });
  const routes = recorded(balancer, 'route');
  return { clock, balancer, routes };
}

/** A key whose home differs between a 1009-slot and a 65537-slot table over IDS. */
function movingKey(balancer: Balancer<string>): string {
  const probe = consistentHash({ algorithm: 'maglev', tableSize: 65537 });
  probe.rebuild(balancer.shards);
  for (let i = 0; i < 10_000; i++) {
    const k = `k${i}`;
    if (probe.home(balancer.shards, k)!.id !== balancer.homeOf(k)) return k;
  }
  throw new Error('no moving key');
}

describe('maglev resize() on a live balancer', () => {
  it("strict: a keyed run waiting for its capped old home runs on the key's new home after resize()", async () => {
    const picker = consistentHash({ algorithm: 'maglev', tableSize: 1009 });
    const { clock, balancer, routes } = make(picker, 1);
    const key = movingKey(balancer);
    const oldHome = balancer.homeOf(key)!;
    const ran: string[] = [];
    // The first run holds the old home (cap 1) for 100 ms; the second waits in its line.
    const first = balancer.run(
      (s) => {
        ran.push(s.id);
        return resolveAfter(clock, 100, s.id);
      },
      { key },
    );
    const second = balancer.run(
      (s) => {
        ran.push(s.id);
        return resolveAfter(clock, 10, s.id);
      },
      { key },
    );
    await tick(clock, 1);
    expect(ran).toEqual([oldHome]);
    picker.resize(65537);
    const newHome = balancer.homeOf(key)!;
    expect(newHome).not.toBe(oldHome);
    await tick(clock, 200);
    await Promise.all([first, second]);
    // The second run started after resize(), when its key's home was newHome.
    expect(routes[1]).toMatchObject({ home: newHome });
    expect(ran).toEqual([oldHome, newHome]);
    await balancer.close();
  });

  it("spill: a retry that runs on its key's new home after resize() is not a displacement", async () => {
    const picker = consistentHash({ algorithm: 'maglev', tableSize: 1009, affinity: 'spill' });
    const { clock, balancer, routes } = make(picker);
    const key = movingKey(balancer);
    const oldHome = balancer.homeOf(key)!;
    const run = balancer.run(
      (s, ctx) =>
        ctx.attempt === 1 ? failAfter(clock, 1, new Error('flaky')) : resolveAfter(clock, 1, s.id),
      { key, idempotent: true },
    );
    await tick(clock, 2); // attempt 1 failed on the old home; the retry waits for its backoff
    picker.resize(65537);
    const newHome = balancer.homeOf(key)!;
    expect(newHome).not.toBe(oldHome);
    await tick(clock, 5_000);
    expect(await run).toBe(newHome);
    // The retry ran on the key's home: 'direct', home = newHome, nothing displaced.
    expect(routes.map((r) => [r.shardId, r.reason, r.home])).toEqual([
      [oldHome, 'direct', oldHome],
      [newHome, 'direct', newHome],
    ]);
    expect(balancer.stats().displaced.total).toBe(0);
    await balancer.close();
  });
});
