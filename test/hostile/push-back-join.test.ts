/**
 * A retry held by push-back when the membership changes under it.
 */
import { describe, expect, it } from 'vitest';
import { PushBackError, roundRobin } from '../../src/index.js';
import { makeBalancer, resolveAfter, tick, track } from '../helpers.js';

describe('a retry waiting out push-back when a free shard joins', () => {
  it('goes to the new shard instead of waiting for the one that pushed back', async () => {
    const { clock, balancer } = makeBalancer({ picker: roundRobin(), timeoutMs: 60_000 }, ['a']);
    const tried: [string, number][] = [];
    const run = track(
      balancer.run(
        (s) => {
          tried.push([s.id, clock.now()]);
          return s.id === 'a'
            ? Promise.reject(new PushBackError(30_000))
            : resolveAfter(clock, 5, s.id);
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 10);
    expect(tried).toEqual([['a', 0]]);
    // A new shard joins (autoscaling, DNS): the retry may go there now.
    balancer.addShard({ id: 'b', target: 'b' });
    // A first attempt admitted now goes to b at once…
    const fresh = track(balancer.run((s) => resolveAfter(clock, 5, s.id)));
    await tick(clock, 2_000);
    expect(fresh.value).toBe('b');
    // …and so should the retry: push-back never delays a retry elsewhere.
    expect({ settled: run.settled, value: run.value, tried }).toEqual({
      settled: true,
      value: 'b',
      tried: [
        ['a', 0],
        ['b', expect.any(Number)],
      ],
    });
  });
});
