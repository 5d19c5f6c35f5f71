import { describe, expect, it } from 'vitest';
import { Balancer, consistentHash, roundRobin } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { failAfter, resolveAfter, tick, track } from '../helpers.js';

function setup() {
  const clock = new ManualClock();
  const balancer = new Balancer<string>({
    shards: [
      { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
      { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
      { id: 'cl-2', target: 'cl-2', labels: { site: 'cloud' } },
      { id: 'cl-3', target: 'cl-3', labels: { site: 'cloud' } },
    ],
    picker: consistentHash({ fallback: roundRobin() }),
    clock,
    random: seededRandom(1),
    health: { consecutiveFailures: 1 },
    retry: false,
    timeoutMs: 1_000,
    maxInFlightPerShard: 1,
  });
  return { clock, balancer };
}

describe('strict keyed runs in panic within their rule', () => {
  it('a keyed run waiting only for a slot on its (ejected, but usable) home is not failed by the home-wait deadline', async () => {
    const { clock, balancer } = setup();
    const onprem = { site: 'onprem' };
    const failing = track(
      balancer.run(() => failAfter(clock, 1, new Error('503')), { require: onprem }),
    );
    await tick(clock, 5);
    expect(failing.ok).toBe(false);
    expect(balancer.stats().shards[0]!.ejected).toBe(true);
    // Three runs of one key, each 600 ms, on the rule's only shard (usable: panic within the rule).
    const runs = [0, 1, 2].map(() =>
      track(balancer.run(() => resolveAfter(clock, 600, 'ok'), { key: 'k', require: onprem })),
    );
    await tick(clock, 2_000);
    expect(
      runs.map((r) =>
        r.ok ? r.value : `${(r.error as Error).name}: ${(r.error as Error).message}`,
      ),
    ).toEqual(['ok', 'ok', 'ok']);
    await balancer.close();
  });

  it('control: the same with a healthy home waits with no deadline', async () => {
    const { clock, balancer } = setup();
    const onprem = { site: 'onprem' };
    const runs = [0, 1, 2].map(() =>
      track(balancer.run(() => resolveAfter(clock, 600, 'ok'), { key: 'k', require: onprem })),
    );
    await tick(clock, 2_000);
    expect(runs.map((r) => (r.ok ? r.value : String(r.error)))).toEqual(['ok', 'ok', 'ok']);
    await balancer.close();
  });
});
