import { describe, expect, it } from 'vitest';
import { consistentHash, roundRobin } from '../../src/index.js';
import { flush, makeBalancer, shardsOf } from '../helpers.js';

describe('docs/choosing-a-picker.md, as it reads now', () => {
  // "Weights count in every picker but `roundRobin()`, the unweighted baseline" (it said every
  // picker divides load by weight).
  it('roundRobin is the unweighted baseline: weights 1 and 3 get one turn each', async () => {
    const { balancer } = makeBalancer({
      shards: [
        { id: 'light', target: 'l', weight: 1 },
        { id: 'heavy', target: 'h', weight: 3 },
      ],
      picker: roundRobin(),
    });
    const counts: Record<string, number> = { light: 0, heavy: 0 };
    for (let i = 0; i < 400; i++) counts[await balancer.run(async (s) => s.id)]!++;
    expect(counts).toEqual({ light: 200, heavy: 200 });
  });

  // "it also moves when its home already holds `ceil(c × (inFlight + 1) / n)` calls, the most a
  // shard may hold" (it said "more than": one call later than the code, and the paper, move it).
  it('boundedLoad: a key moves once its home already holds ceil(c × (inFlight + 1) / n)', async () => {
    const { balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      picker: consistentHash({ boundedLoad: 1.25 }),
    });
    const home = balancer.homeOf('k')!;
    const ids: string[] = [];
    const hang = (s: { id: string }) => {
      ids.push(s.id);
      return new Promise(() => {});
    };
    void balancer.run(hang, { key: 'k' });
    await flush();
    // Home holds 1; inFlight 1, n 4 → ceil(1.25 × 2 / 4) = 1: the home is at the bound, so the
    // next run of the key goes to the next shard of its order.
    void balancer.run(hang, { key: 'k' });
    await flush();
    expect(ids[0]).toBe(home);
    expect(ids[1]).not.toBe(home);
    expect(balancer.stats().displaced.bounded).toBe(1);
  });
});
