import { describe, expect, it } from 'vitest';
import type { ShardState } from '../../src/base/types.js';
import type { EjectEvent, RestoreEvent } from '../../src/index.js';
import { failAfter, flush, makeBalancer, resolveAfter, shardsOf, tick, track } from '../helpers.js';

// docs/retries-and-health.md, Outlier ejection: "When the time is up, the shard takes **one probe
// call**: success restores it (`restore` with `phase: 'healthy'`), failure ejects it again, for
// longer." A call that started before the ejection is not that probe.
/**
 * Shards a and b, every run on a (its picker offers nothing else), ejected after two failures in
 * a row for 1 s; with its eject and restore events.
 */
function probing() {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a', 'b']),
    picker: {
      name: 'only-a',
      pick: (shards: readonly ShardState[]) => shards.find((s) => s.id === 'a'),
    },
    retry: false,
    health: {
      consecutiveFailures: 2,
      failurePercent: false,
      baseEjectionMs: 1_000,
      maxEjectedPercent: 50,
      panicThreshold: 0,
    },
  });
  const ejects: EjectEvent[] = [];
  const restores: RestoreEvent[] = [];
  balancer.on('eject', (e) => ejects.push(e));
  balancer.on('restore', (e) => restores.push(e));
  return { clock, balancer, ejects, restores };
}

describe('probe after ejection', () => {
  it('a call started before the ejection that fails after it expired does not re-eject without a probe', async () => {
    const { clock, balancer, ejects, restores } = probing();
    const probes: number[] = [];
    // a slow call, in flight across the ejection
    const stale = track(balancer.run(() => failAfter(clock, 5_000, new Error('slow failure'))));
    await balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    await balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    expect(ejects.map((e) => e.durationMs)).toEqual([1_000]);
    await tick(clock, 1_000); // ejection over: a probe may go
    expect(restores).toEqual([{ shardId: 'a', phase: 'probe' }]);
    // A run now wants 'a': it should be able to be the probe.
    const probe = track(
      balancer.run((shard) => {
        probes.push(clock.now());
        return Promise.resolve(shard.id);
      }),
    );
    await flush();
    await tick(clock, 4_000); // the stale call fails at t = 5000
    expect(stale.settled).toBe(true);
    // The probe call was made (and succeeded), or at least the stale failure did not count as one.
    expect({
      probes,
      ejects: ejects.map((e) => [e.durationMs, e.ejections]),
      probeSettled: probe.settled,
      probeError: String(probe.error),
    }).toEqual({
      probes: [1_000],
      ejects: [[1_000, 1]],
      probeSettled: true,
      probeError: 'undefined',
    });
    await balancer.close({ drain: false });
  });

  it('a call started before the ejection that succeeds after it expired does not restore the shard: the probe decides', async () => {
    const { clock, balancer, ejects, restores } = probing();
    const stale = track(balancer.run(() => resolveAfter(clock, 5_000, 'late')));
    await balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    await balancer.run(() => Promise.reject(new Error('x'))).catch(() => {});
    await tick(clock, 5_000); // probing from t = 1000; the stale call succeeds at t = 5000
    expect(stale.value).toBe('late');
    expect(restores).toEqual([{ shardId: 'a', phase: 'probe' }]);
    // The probe, now, fails: the shard is ejected again, for longer (it was never restored).
    await balancer.run(() => Promise.reject(new Error('still down'))).catch(() => {});
    expect(ejects.map((e) => [e.durationMs, e.ejections])).toEqual([
      [1_000, 1],
      [2_000, 2],
    ]);
    await balancer.close({ drain: false });
  });
});
