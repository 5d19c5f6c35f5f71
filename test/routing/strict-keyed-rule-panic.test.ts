/**
 * Panic inside a rule, for a strict keyed run. docs/routing-rules.md: "Panic mode stays
 * inside it: when no allowed shard is healthy, ejection is ignored among the allowed shards
 * only." An unkeyed run with the rule does get the ejected shard; a strict keyed run with the
 * same rule (its home is the rule's only shard) must too.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, roundRobin } from '../../src/index.js';
import { failAfter, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

/** op-1 onprem, cl-1…3 cloud; strict consistent hashing; one failure ejects (cap 32: the default). */
function setup(maxInFlightPerShard = 32) {
  const { clock, balancer } = makeBalancer({
    shards: [
      { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
      { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
      { id: 'cl-2', target: 'cl-2', labels: { site: 'cloud' } },
      { id: 'cl-3', target: 'cl-3', labels: { site: 'cloud' } },
    ],
    picker: consistentHash({ fallback: roundRobin() }),
    health: { consecutiveFailures: 1 },
    retry: false,
    timeoutMs: 1_000,
    maxInFlightPerShard,
  });
  return { clock, balancer };
}

describe('panic within a rule, strict keyed runs', () => {
  it('a strict keyed run whose rule allows only ejected shards runs there, as an unkeyed run with the rule does', async () => {
    const { clock, balancer } = setup();
    const onprem = { site: 'onprem' };
    const failing = track(
      balancer.run(() => failAfter(clock, 1, new Error('503')), { require: onprem }),
    );
    await tick(clock, 5);
    expect(failing.ok).toBe(false);
    // op-1, the rule's only shard, is ejected; 3 of 4 shards are healthy: no global panic.
    expect(balancer.stats().shards.map((s) => s.ejected)).toEqual([true, false, false, false]);
    expect(balancer.stats().panic).toBe(false);

    const unkeyed = track(balancer.run(async (shard) => shard.id, { require: onprem }));
    const keyed = track(balancer.run(async (shard) => shard.id, { key: 'k', require: onprem }));
    await tick(clock, 2_000); // past the keyed run's timeoutMs, well before op-1's 30 s ejection ends
    expect({
      unkeyed: unkeyed.value,
      keyed: keyed.ok ? keyed.value : String(keyed.error),
    }).toEqual({ unkeyed: 'op-1', keyed: 'op-1' });
  });
});

describe('strict keyed runs in panic within their rule', () => {
  it('a keyed run waiting only for a slot on its (ejected, but usable) home is not failed by the home-wait deadline', async () => {
    const { clock, balancer } = setup(1);
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
    const { clock, balancer } = setup(1);
    const onprem = { site: 'onprem' };
    const runs = [0, 1, 2].map(() =>
      track(balancer.run(() => resolveAfter(clock, 600, 'ok'), { key: 'k', require: onprem })),
    );
    await tick(clock, 2_000);
    expect(runs.map((r) => (r.ok ? r.value : String(r.error)))).toEqual(['ok', 'ok', 'ok']);
    await balancer.close();
  });
});
