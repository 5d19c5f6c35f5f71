/**
 * Availability, the one owner of "who may take work now": slots taken and freed through it keep
 * the count of shards that cannot be offered exact, whatever moves a limit meanwhile; `why` says
 * what keeps a shard; panic is recounted on health changes.
 */
import { describe, expect, it } from 'vitest';
import { Shard } from '../../src/load/shard.js';
import { Availability } from '../../src/routing/availability.js';
import { ManualClock } from '../../src/testing/index.js';

function fleet(limits: number[]) {
  const clock = new ManualClock();
  const shards = limits.map(
    (limit, i) => new Shard<string>({ id: `s${i}`, target: `s${i}` }, i, limit, clock, {}),
  );
  let panic = false;
  const changes: boolean[] = [];
  const availability = new Availability<string>({
    members: () => shards,
    inPanic: () => panic,
    panicChanged: (active) => changes.push(active),
  });
  availability.recount();
  return { clock, shards, availability, changes, setPanic: (p: boolean) => (panic = p) };
}

describe('Availability', () => {
  it('gives one answer for a removed shard: not available, and why says it has no slot', () => {
    const { shards, availability } = fleet([2]);
    const a = shards[0]!;
    expect(availability.why(a, 0)).toBeUndefined();
    a.removed = true;
    expect(availability.available(a)).toBe(false);
    expect(availability.why(a, 0)).toBe('capped');
  });

  it('counts a shard blocked while its slots are full, and free again when one frees', () => {
    const { shards, availability } = fleet([2, 1]);
    const [a, b] = shards as [Shard<string>, Shard<string>];
    expect(availability.blocked).toBe(0);
    availability.take(a, 0);
    expect(availability.blocked).toBe(0);
    availability.take(a, 0);
    expect(availability.blocked).toBe(1);
    expect(availability.available(a)).toBe(false);
    availability.take(b, 0);
    expect(availability.blocked).toBe(2);
    availability.free(a, 0, false);
    expect(availability.blocked).toBe(1);
    expect(availability.why(a, 0)).toBeUndefined();
    expect(availability.why(b, 0)).toBe('capped');
  });

  it('a limit moved while a slot is freed is counted once, with the slot', () => {
    const { shards, availability } = fleet([1]);
    const a = shards[0]!;
    availability.take(a, 0);
    expect(availability.blocked).toBe(1);
    // The limit falls to 0 while the slot is still taken (an adaptive limit's sample), then the
    // slot frees: blocked before, blocked after — counted once, not once a change.
    availability.free(a, 0, false, () => {
      a.limit = 0;
    });
    expect(availability.blocked).toBe(1);
    expect(availability.setLimit(a, 3)).toBe(true);
    expect(availability.blocked).toBe(0);
    expect(availability.setLimit(a, 3)).toBe(false);
    expect(availability.setLimit(a, 2)).toBe(false);
    expect(availability.blocked).toBe(0);
  });

  it('says why a shard can take nothing: ejected (unless panic), pushing back, capped', () => {
    const { clock, shards, availability, changes, setPanic } = fleet([1, 1]);
    const a = shards[0]!;
    a.health.state = 'ejected';
    availability.recount();
    expect(availability.why(a, clock.now())).toBe('ejected');
    expect(availability.why(a, clock.now(), true)).toBeUndefined(); // panic within a rule
    expect(availability.blocked).toBe(1);
    setPanic(true);
    availability.recount();
    expect(availability.panic).toBe(true);
    expect(changes).toEqual([true]);
    expect(availability.why(a, clock.now())).toBeUndefined();
    expect(availability.blocked).toBe(0);
    a.holdPushBack(100);
    expect(availability.why(a, clock.now())).toBe('pushback');
    clock.advance(100);
    expect(availability.why(a, clock.now())).toBeUndefined();
  });

  it('a probing shard takes one probe at a time, and says so', () => {
    const { shards, availability } = fleet([5]);
    const a = shards[0]!;
    a.health.state = 'probing';
    availability.recount();
    expect(availability.take(a, 0)).toBe(true);
    expect(availability.available(a)).toBe(false);
    expect(availability.blocked).toBe(1);
    availability.free(a, 0, true);
    expect(availability.available(a)).toBe(true);
    expect(availability.blocked).toBe(0);
  });
});
