/**
 * A shard that once answered (its latency estimate was sampled) and then fails fast.
 * Failures faster than the estimate are no latency sample, so the estimate only decays (e^−t/τ,
 * τ = 10 s) while the shard keeps failing; the failure factor is capped at 100×, so after a while
 * rtt × factor is below the healthy shards' cost and peakEwma sends the failing shard its full
 * share of picks again — the "fast failures attract traffic" bug class.
 */
import { describe, expect, it } from 'vitest';
import { type HealthOptions, peakEwma } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick } from '../helpers.js';

interface Scenario {
  health: HealthOptions | false;
  bad: string[];
  healthyMs: number;
  /** 0: the call rejects at once (connection refused, a client that throws). */
  badMs: number;
  seconds: number;
}

/** Sequential runs on 4 shards; after 5 s of health the `bad` shards fail in `badMs`. */
async function drive(s: Scenario) {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a', 'b', 'c', 'd']),
    picker: peakEwma(),
    random: seededRandom(7),
    retry: { attempts: 1 },
    health: s.health,
  });
  let failing = false;
  const picks: { at: number; id: string }[] = [];
  balancer.on('pick', (e) => picks.push({ at: clock.now(), id: e.shard.id }));
  const one = async () => {
    let lat = s.healthyMs;
    const p = balancer
      .run((shard) => {
        if (failing && s.bad.includes(shard.id)) {
          lat = s.badMs;
          const error = Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
          return s.badMs === 0 ? Promise.reject(error) : failAfter(clock, s.badMs, error);
        }
        lat = s.healthyMs;
        return resolveAfter(clock, s.healthyMs, shard.id);
      })
      .catch(() => undefined);
    await tick(clock, lat);
    await p;
  };
  while (clock.now() < 5_000) await one();
  failing = true;
  const start = clock.now();
  const end = start + s.seconds * 1_000;
  for (let i = 0; i < 100_000 && clock.now() < end; i++) await one();
  // The last 20 s.
  const late = picks.filter((p) => p.at >= end - 20_000);
  const bad = late.filter((p) => s.bad.includes(p.id)).length;
  const costs = balancer.shards.map((sh) => `${sh.id}:${sh.cost.toFixed(3)}`).join(' ');
  await balancer.close();
  return {
    share: bad / late.length,
    detail: `${bad}/${late.length} picks on ${s.bad}; costs ${costs}`,
  };
}

describe('a shard that fails fast must keep repelling traffic, however long it fails', () => {
  it('health: false — healthy shards answer in 200 ms, one fails in 1 ms: after 2 min it gets ≤ 10 % of picks', async () => {
    const r = await drive({ health: false, bad: ['d'], healthyMs: 200, badMs: 1, seconds: 120 });
    expect(r.share, r.detail).toBeLessThanOrEqual(0.1);
  }, 60_000);

  it('health: false — one shard fails at once (0 ms), healthy ones in 10 ms: after 2 min it gets ≤ 10 % of picks', async () => {
    const r = await drive({ health: false, bad: ['d'], healthyMs: 10, badMs: 0, seconds: 120 });
    expect(r.share, r.detail).toBeLessThanOrEqual(0.1);
  }, 60_000);

  it('default health — 2 of 4 shards fail in 1 ms (the cap keeps one in), healthy in 200 ms: ≤ 10 % of picks after 2 min', async () => {
    const r = await drive({ health: {}, bad: ['c', 'd'], healthyMs: 200, badMs: 1, seconds: 120 });
    expect(r.share, r.detail).toBeLessThanOrEqual(0.1);
  }, 60_000);
});
