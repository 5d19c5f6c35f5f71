/**
 * README, The Balancer › `shards`: "The live membership as read-only `ShardState`s", in a frozen
 * list. It was the membership's own array: a JavaScript caller that popped it took a shard out of
 * the membership behind the balancer's back (no removal, no drain, no event).
 */
import { describe, expect, it } from 'vitest';
import { Balancer, roundRobin } from '../src/index.js';

describe('balancer.shards is a read-only view', () => {
  it('the list is frozen: changing it throws and the membership stays', async () => {
    const balancer = new Balancer({
      shards: [
        { id: 'a', target: 1 },
        { id: 'b', target: 2 },
      ],
      picker: roundRobin(),
    });
    const view = balancer.shards as unknown as { id: string }[];
    expect(() => view.pop()).toThrow(TypeError);
    expect(() => view.splice(0, 1)).toThrow(TypeError);
    expect(balancer.shards).toBe(view); // the same list until the membership changes
    const ran = new Set<string>();
    for (let i = 0; i < 10; i++) ran.add(await balancer.run(async (shard) => shard.id));
    expect([...ran].sort()).toEqual(['a', 'b']);
    expect(balancer.shards.map((s) => s.id)).toEqual(['a', 'b']);
    balancer.addShard({ id: 'c', target: 3 });
    expect(balancer.shards).not.toBe(view);
    expect(balancer.shards.map((s) => s.id)).toEqual(['a', 'b', 'c']);
    await balancer.close();
  });
});
