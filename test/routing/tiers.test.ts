/**
 * The `prefer` tiers through their own API (`routing/tiers.ts`): each shard's tier at every
 * membership (the tiers compiled once, on the first), and when a run held by a saturated tier
 * spills — with the one wake-up for the earliest queued run, cancelled by `stop()`.
 */
import { describe, expect, it } from 'vitest';
import { Shard } from '../../src/load/shard.js';
import { Tiers } from '../../src/routing/tiers.js';
import { ManualClock } from '../../src/testing/index.js';

function shard(id: string, region: string, clock: ManualClock): Shard<string> {
  return new Shard<string>({ id, target: id, labels: { region } }, 0, 1, clock, {});
}

function tiers(spillAfterMs: number) {
  const clock = new ManualClock();
  const pumps = { count: 0 };
  const room = new Tiers([{ region: 'eu' }, { region: 'us' }], {
    clock,
    spillAfterMs,
    pump: () => pumps.count++,
  });
  return { clock, pumps, room };
}

describe('Tiers', () => {
  it('gives each shard its first matching tier, and one no tier names the last', () => {
    const { clock, room } = tiers(100);
    expect(room.compiled).toBeUndefined();
    const shards = [shard('a', 'us', clock), shard('b', 'eu', clock), shard('c', 'ap', clock)];
    room.install(shards);
    expect(shards.map((s) => s.tier)).toEqual([1, 0, 2]);
    const compiled = room.compiled;
    expect(compiled).toHaveLength(2);
    // A later membership is assigned with the same compiled tiers.
    const joined = shard('d', 'eu', clock);
    room.install([...shards, joined]);
    expect([room.compiled, joined.tier]).toEqual([compiled, 0]);
  });

  it('a run spills once it waited spillAfterMs in the queue; one not queued waits from now', () => {
    const { clock, room } = tiers(100);
    clock.advance(1_000);
    const queued = { queued: true, queuedAtMs: 950 };
    expect(room.maySpill(queued, 1_000)).toBe(false);
    expect(room.maySpill({ queued: true, queuedAtMs: 900 }, 1_000)).toBe(true);
    expect(room.maySpill({ queued: false, queuedAtMs: 0 }, 1_000)).toBe(false);
    // With spillAfterMs 0, a run routed at admission spills at once, as from the queue.
    expect(tiers(0).room.maySpill({ queued: false, queuedAtMs: 0 }, 0)).toBe(true);
  });

  it('arms one wake-up, for the earliest queued run, that pumps once; stop() cancels it', () => {
    const { clock, pumps, room } = tiers(100);
    room.maySpill({ queued: true, queuedAtMs: 50 }, 0); // may spill at 150
    room.maySpill({ queued: true, queuedAtMs: 10 }, 0); // sooner: at 110
    room.maySpill({ queued: true, queuedAtMs: 80 }, 0); // later: the 110 wake-up serves it
    room.maySpill({ queued: false, queuedAtMs: 0 }, 0); // not queued: arms nothing
    expect(clock.pendingTimers).toBe(1);
    clock.advance(109);
    expect(pumps.count).toBe(0);
    clock.advance(1);
    expect([pumps.count, clock.pendingTimers]).toEqual([1, 0]);
    room.maySpill({ queued: true, queuedAtMs: 110 }, 110);
    expect(clock.pendingTimers).toBe(1);
    room.stop();
    clock.advance(1_000);
    expect([pumps.count, clock.pendingTimers]).toEqual([1, 0]);
  });
});
