/**
 * docs/reference.md, The Balancer › `shards`: "The live membership as read-only `ShardState`s", in a copy of
 * the membership's list. It was the membership's own array: a JavaScript caller that popped it
 * took a shard out of the membership behind the balancer's back (no removal, no drain, no event).
 */
import { describe, expect, it } from 'vitest';
import { Balancer, roundRobin } from '../../src/index.js';

describe('balancer.shards is a read-only view', () => {
  it('changing the list changes nothing of the membership', async () => {
    const balancer = new Balancer({
      shards: [
        { id: 'a', target: 1 },
        { id: 'b', target: 2 },
      ],
      picker: roundRobin(),
    });
    const view = balancer.shards as unknown as { id: string }[];
    expect(balancer.shards).toBe(view); // the same list until the membership changes
    view.pop();
    view.splice(0, 1);
    const ran = new Set<string>();
    for (let i = 0; i < 10; i++) ran.add(await balancer.run(async (shard) => shard.id));
    expect([...ran].sort()).toEqual(['a', 'b']);
    expect(balancer.stats().shards.map((s) => s.id)).toEqual(['a', 'b']);
    balancer.addShard({ id: 'c', target: 3 });
    expect(balancer.shards).not.toBe(view); // a new copy, whole
    expect(balancer.shards.map((s) => s.id)).toEqual(['a', 'b', 'c']);
    await balancer.close();
  });
});
