import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { makeBalancer, shardsOf, tick } from '../helpers.js';

// docs/reference.md "## Pickers": `roundRobin()` | each in turn, from the first.
describe('roundRobin(): each in turn', () => {
  it('one failing shard of three: the two healthy shards still get their turns', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: roundRobin(),
      health: false,
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    const served: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 30; i++) {
      const p = balancer.run(
        async (s) => {
          if (s.id === 'a') throw new Error('a is down');
          served[s.id]!++;
          return s.id;
        },
        { idempotent: true },
      );
      await tick(clock, 5);
      await p;
    }
    await balancer.close();
    // Every run reaches a healthy shard: 30 successes in all, shared between b and c.
    // Before: c served all 30 (the cursor counted places in the list offered, and a retry is
    // offered [b, c]). Now a's turn fails over to b, and c has the next turn: 15 and 15.
    expect(served).toEqual({ a: 0, b: 15, c: 15 });
  });
});
