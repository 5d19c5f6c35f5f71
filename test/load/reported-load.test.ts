import { describe, expect, it } from 'vitest';
import { p2c } from '../../src/index.js';
import type { Shard } from '../../src/load/shard.js';
import { seededRandom } from '../../src/testing/index.js';
import { makeBalancer } from '../helpers.js';

/** Load a shard reports about itself (HTTP `x-shard-load`) feeds `load` and `cost` while fresh. */
describe('reported load', () => {
  it('adds to load and cost for 10 s after the last report, then lapses', () => {
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'a', target: 1 },
        { id: 'b', target: 2 },
      ],
    });
    const [a, b] = balancer.shards as readonly Shard<number>[];
    expect(a!.load).toBe(0);
    expect(a!.cost).toBe(30); // defaultRttMs × (0 + 1)
    a!.reportLoad(4);
    expect(a!.reportedLoad).toBe(4);
    expect(a!.load).toBe(4);
    expect(a!.cost).toBe(30 * (0 + 1 + 4));
    clock.advance(9_999);
    expect(a!.load).toBe(4);
    clock.advance(1);
    expect(a!.load).toBe(0);
    expect(a!.cost).toBe(30);
    expect(a!.reportedLoad).toBe(4); // the last report stays visible in stats
    expect(b!.reportedLoad).toBeUndefined();
  });

  it('steers p2c away from a shard that reports itself busy', async () => {
    const { balancer } = makeBalancer({
      shards: [
        { id: 'busy', target: 1 },
        { id: 'idle', target: 2 },
      ],
      picker: p2c(),
      random: seededRandom(2),
    });
    (balancer.shards[0] as Shard<number>).reportLoad(50);
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(await balancer.run(async (shard) => shard.id));
    // With two shards P2C compares both every time: the busy one never wins.
    expect(ids.filter((id) => id === 'busy')).toHaveLength(0);
  });
});
