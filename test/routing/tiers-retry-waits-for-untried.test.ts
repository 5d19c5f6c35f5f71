/**
 * A retry across tiers when the only untried shard is busy. docs/routing-rules.md: "A
 * retry goes to a shard it has not tried, in the first tier that has one …; only when no tier has
 * an untried shard does it go back to one it tried, in tier order." docs/retries-and-health.md:
 * "A retry goes to a shard the run has not tried yet; if those are all busy it waits for one, and
 * only when none is left may it go back to one it tried."
 */
import { describe, expect, it } from 'vitest';
import type { RouteEvent } from '../../src/index.js';
import { failAfter, flush, resolveAfter, tick, track } from '../helpers.js';
import { SITES, twoSites } from './tiers.js';

const make = (prefer: boolean) =>
  twoSites({
    prefer: prefer && SITES,
    maxInFlightPerShard: 1,
    retry: { attempts: 3, budget: false },
  });

describe('retries with prefer tiers, the untried shard busy', () => {
  it('the retry waits for the untried cloud shard instead of going back to the tried on-prem one', async () => {
    const results: Record<string, unknown> = {};
    for (const prefer of [false, true]) {
      const { clock, balancer } = make(prefer);
      const routes: RouteEvent[] = [];
      balancer.on('route', (e) => routes.push(e));
      // cl-1 is busy for 1 s with a run only the cloud may take.
      const busy = track(
        balancer.run(() => resolveAfter(clock, 1_000, 'busy'), { require: { site: 'cloud' } }),
      );
      await flush();
      const tried: string[] = [];
      const run = track(
        balancer.run(
          (shard) => {
            tried.push(shard.id);
            return tried.length === 1
              ? failAfter(clock, 1, new Error('503 from op-1'))
              : resolveAfter(clock, 1, shard.id);
          },
          { idempotent: true },
        ),
      );
      await tick(clock, 2_000);
      expect(busy.value).toBe('busy');
      results[prefer ? 'withTiers' : 'withoutTiers'] = { tried, value: run.value };
    }
    expect(results).toEqual({
      withoutTiers: { tried: ['op-1', 'cl-1'], value: 'cl-1' },
      withTiers: { tried: ['op-1', 'cl-1'], value: 'cl-1' },
    });
  });
});
