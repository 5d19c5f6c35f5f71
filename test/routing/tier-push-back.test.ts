/**
 * Push-back in a preferred tier. docs/retries-and-health.md (Push-back): "the shard is
 * not offered to the picker for retryAfterMs while another shard the run may use can take it —
 * whatever the picker". With `prefer` tiers, a pushed-back shard alone in tier 0 is still offered
 * while the tier-1 shard is idle.
 */
import { describe, expect, it } from 'vitest';
import { PushBackError, type RouteEvent } from '../../src/index.js';
import { flush, tick, track } from '../helpers.js';
import { SITES, twoSites } from './tiers.js';

const make = (prefer: boolean) => twoSites({ prefer: prefer && SITES, retry: false });

describe('push-back in a preferred tier', () => {
  it('a new run goes to the idle tier-1 shard, not to the tier-0 shard that pushes back', async () => {
    const results: Record<string, unknown> = {};
    for (const prefer of [false, true]) {
      const { clock, balancer } = make(prefer);
      const routes: RouteEvent[] = [];
      balancer.on('route', (e) => routes.push(e));
      const first = track(
        balancer.run(async () => {
          throw new PushBackError(10_000); // op-1: "slow down for 10 s"
        }),
      );
      await flush();
      expect(first.error).toBeInstanceOf(PushBackError);
      const next = track(balancer.run(async (shard) => shard.id));
      await tick(clock, 5);
      results[prefer ? 'withTiers' : 'withoutTiers'] = next.value;
    }
    // Without tiers op-1 is spared; with tiers the rule of push-back must hold just the same.
    expect(results).toEqual({ withoutTiers: 'cl-1', withTiers: 'cl-1' });
  });
});
