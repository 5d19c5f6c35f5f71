/**
 * Recovery as fast as the shard: while keyed runs wait for their ejected home, the home is probed
 * early — after 250 ms, then 500 ms, 1 s and every 2 s while probes fail, never before its
 * `Retry-After` — and the waiting run is the probe. Unkeyed traffic keeps the ejection's own time.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, PushBackError } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer, shardsOf, tick } from '../helpers.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

function setup(picker = consistentHash()) {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a', 'b', 'c']),
    picker,
    random: seededRandom(7),
    health: { consecutiveFailures: 1, baseEjectionMs: 600_000 },
    retry: { attempts: 3, backoff: { baseMs: 0, maxMs: 0 }, budget: false },
  });
  return { clock, balancer };
}

describe('an ejected home with keyed runs waiting for it', () => {
  it('is probed at 250 ms, 500 ms, 1 s, 2 s, 2 s… and restored by the first probe that succeeds', async () => {
    const { clock, balancer } = setup();
    const key = 'tenant-1';
    const home = balancer.homeOf(key)!;
    let up = false;
    const calls: number[] = [];
    const restores: string[] = [];
    balancer.on('restore', (e) => restores.push(`${e.shardId}:${e.phase}`));
    const result = balancer.run(
      async (shard) => {
        calls.push(clock.now());
        if (shard.id === home && !up) throw refused();
        return shard.id;
      },
      { key, idempotent: true },
    );
    await flush();
    expect(calls).toEqual([0]); // refused: ejected at once (one failure), the run waits
    expect(balancer.stats().shards.find((s) => s.id === home)!.ejected).toBe(true);
    await tick(clock, 4_000);
    // Probes at +250, +750 (500 later), +1 750 (1 s), +3 750 (2 s), each one refused.
    expect(calls.map((t) => Math.round(t))).toEqual([0, 250, 750, 1_750, 3_750]);
    expect(restores).toEqual([]); // early probes are not announced; the ejection is the same one
    up = true;
    await tick(clock, 2_000);
    expect(await result).toBe(home);
    expect(calls.map((t) => Math.round(t))).toEqual([0, 250, 750, 1_750, 3_750, 5_750]);
    expect(restores).toEqual([`${home}:healthy`]);
    expect(balancer.stats().shards.find((s) => s.id === home)!.ejected).toBe(false);
  });

  it('never probes before the home’s Retry-After', async () => {
    const { clock, balancer } = setup();
    const key = 'tenant-2';
    const home = balancer.homeOf(key)!;
    const calls: number[] = [];
    // Ejected by a refusal; a push-back of 3 s came just before.
    const result = balancer.run(
      async (shard) => {
        calls.push(clock.now());
        if (calls.length === 1) throw new PushBackError(3_000);
        if (calls.length === 2) throw refused();
        return shard.id;
      },
      { key, idempotent: true },
    );
    await tick(clock, 10_000);
    expect(await result).toBe(home);
    expect(calls[1]!).toBeGreaterThanOrEqual(3_000);
    // The probe after the refusal waits 250 ms, but not before the push-back has ended.
    expect(calls[2]! - calls[1]!).toBeGreaterThanOrEqual(250);
  });

  it('unkeyed traffic does not probe early: the ejection keeps its own time', async () => {
    const { clock, balancer: unkeyed } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      health: { consecutiveFailures: 1, baseEjectionMs: 600_000 },
    });
    const reached: string[] = [];
    const first = unkeyed.run(
      async (shard) => {
        reached.push(shard.id);
        if (reached.length === 1) throw refused();
        return shard.id;
      },
      { idempotent: true },
    );
    await tick(clock, 1_000);
    await first;
    const ejected = reached[0]!;
    expect(unkeyed.stats().shards.find((s) => s.id === ejected)!.ejected).toBe(true);
    // Ten seconds of unkeyed runs, one every 250 ms: none is sent to the ejected shard.
    for (let i = 0; i < 40; i++) {
      const run = unkeyed.run(async (shard) => {
        reached.push(shard.id);
        return shard.id;
      });
      await tick(clock, 250);
      await run;
    }
    expect(reached.slice(1).filter((id) => id === ejected)).toEqual([]);
    expect(reached).toHaveLength(42);
  });
});
