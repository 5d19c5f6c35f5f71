/**
 * A keyed run under `affinity: 'spill'` (no `boundedLoad`) with `prefer` tiers, whose
 * key's home is in a later tier than the one the run is sent to. The audit trail must say why it
 * did not run on its home: "displaced:bounded" is reserved for bounded loads (docs/reference.md:
 * "`boundedLoad: c` … it also moves when its home already holds ceil(c × (inFlight + 1) / n)").
 */
import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../src/index.js';
import { makeBalancer, recorded, tick, track } from '../helpers.js';

describe("affinity 'spill' with prefer tiers: the key's home in a later tier", () => {
  it('a run placed in tier 0 away from its idle cloud home is not reported as a bounded-load displacement', async () => {
    const picker = consistentHash({ affinity: 'spill' }); // no boundedLoad
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
        { id: 'op-2', target: 'op-2', labels: { site: 'onprem' } },
        { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
        { id: 'cl-2', target: 'cl-2', labels: { site: 'cloud' } },
      ],
      picker,
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
    });
    const routes = recorded(balancer, 'route');
    // A key whose home is a cloud shard (deterministic: murmur3 over fixed keys).
    let key: string | undefined;
    for (let i = 0; i < 200 && key === undefined; i++) {
      if (balancer.homeOf(`k${i}`)?.startsWith('cl-')) key = `k${i}`;
    }
    expect(key).toBeDefined();
    const home = balancer.homeOf(key!);
    const run = track(balancer.run(async (shard) => shard.id, { key: key! }));
    await tick(clock, 10);
    expect(run.ok).toBe(true);
    // Every shard is idle and healthy: nothing was capped, ejected, retried, nor over a load bound.
    const stats = balancer.stats();
    expect({
      ranOn: run.value,
      home,
      reason: routes[0]!.reason,
      bounded: stats.displaced.bounded,
      homeBounded: stats.shards.find((s) => s.id === home)!.displaced.bounded,
    }).toEqual({
      ranOn: 'op-1',
      home,
      reason: expect.not.stringMatching(/^displaced:bounded$/),
      bounded: 0,
      homeBounded: 0,
    });
  });
});
