/**
 * The router through its own API (`route`, `home`, `strictHome`, `homeOf`, `canTake`): where one
 * attempt goes — a shard, a wait in the queue, a wait in its home's line, or the error that ends
 * the run — for unkeyed and keyed runs, with rules, and a picker that misbehaves.
 */
import { describe, expect, it } from 'vitest';
import { NoShardAvailableError, PickerError, PushBackError } from '../../src/base/errors.js';
import type { Shard } from '../../src/load/shard.js';
import { PARK, WAIT } from '../../src/routing/router.js';
import { firstPicker, newRun, routingRooms, tablePicker, triedOn } from './rooms.js';

const ABC = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];

describe('Router: unkeyed runs', () => {
  it('routes to the shard the picker chooses among every member that can take work', () => {
    const picker = firstPicker((offered) => offered[1]);
    const { router, shard } = routingRooms(ABC, { picker });
    expect(router.route(newRun(), 0)).toBe(shard('b'));
    expect(picker.offers).toEqual([['a', 'b', 'c']]);
  });

  it('never offers the picker a shard at its cap, and waits in the queue when every shard is', () => {
    const picker = firstPicker();
    const rooms = routingRooms(ABC, { picker });
    rooms.fill('a');
    expect(rooms.router.route(newRun(), 0)).toBe(rooms.shard('b'));
    rooms.fill('b');
    rooms.fill('c');
    expect(rooms.router.route(newRun(), 0)).toBe(WAIT);
    expect(picker.offers).toEqual([['b', 'c']]);
  });

  it('tells the picker the attempt number, the time and the in-flight count', () => {
    const seen: unknown[] = [];
    const picker = firstPicker();
    const pick = picker.pick;
    picker.pick = (shards, request) => {
      seen.push({ attempt: request.attempt, now: request.now, total: request.totalInFlight });
      return pick(shards, request);
    };
    const rooms = routingRooms(ABC, { picker });
    rooms.inFlight.count = 7;
    rooms.router.route(triedOn(newRun(), rooms.shard('a')), 1_234);
    expect(seen).toEqual([{ attempt: 2, now: 1_234, total: 7 }]);
  });

  it('fails the run when there is no shard at all', () => {
    const rooms = routingRooms(ABC, { picker: firstPicker() });
    rooms.install([]);
    const route = rooms.router.route(newRun(), 0);
    expect(route).toBeInstanceOf(NoShardAvailableError);
    expect((route as Error).message).toMatch(/no shards/);
  });
});

describe('Router: rules', () => {
  const ZONED = [
    { id: 'a', labels: { region: 'eu' } },
    { id: 'b', labels: { region: 'us' } },
    { id: 'c', labels: { region: 'eu' } },
  ];

  it('offers only the shards a run’s rule allows', () => {
    const picker = firstPicker();
    const rooms = routingRooms(ZONED, { picker });
    const run = newRun({ requirement: rooms.rule({ region: 'us' }) });
    expect(rooms.router.route(run, 0)).toBe(rooms.shard('b'));
    expect(picker.offers).toEqual([['b']]);
  });

  it('a rule whose shards are all busy waits; one that no member satisfies fails the run', () => {
    const rooms = routingRooms(ZONED, { picker: firstPicker() });
    rooms.fill('b');
    expect(rooms.router.route(newRun({ requirement: rooms.rule({ region: 'us' }) }), 0)).toBe(WAIT);
    const nowhere = rooms.router.route(newRun({ requirement: rooms.rule({ region: 'mars' }) }), 0);
    expect(nowhere).toBeInstanceOf(NoShardAvailableError);
    expect((nowhere as Error).message).toContain('region=mars');
  });

  it('keeps a rule through panic: no shard outside it is offered when its own are ejected', () => {
    const picker = firstPicker();
    const rooms = routingRooms(ZONED, { picker });
    rooms.eject('b');
    // Every shard of the rule is ejected: ejection is ignored inside the rule, never the rule.
    expect(rooms.router.route(newRun({ requirement: rooms.rule({ region: 'us' }) }), 0)).toBe(
      rooms.shard('b'),
    );
    expect(picker.offers).toEqual([['b']]);
  });
});

describe('Router: a picker that misbehaves fails the run, never hangs it', () => {
  it('returning a shard it was not offered is a PickerError: a capped one, or another fleet’s', () => {
    let answer: Shard<string> | undefined;
    const rooms = routingRooms(ABC, { picker: firstPicker(() => answer) });
    answer = rooms.shard('a');
    rooms.fill('a');
    const capped = rooms.router.route(newRun(), 0);
    expect(capped).toBeInstanceOf(PickerError);
    expect((capped as Error).message).toContain(
      'returned shard "a", which is not one of the shards',
    );
    answer = routingRooms(ABC, { picker: firstPicker() }).shard('b');
    expect(rooms.router.route(newRun(), 0)).toBeInstanceOf(PickerError);
  });

  it('choosing none of a non-empty list is a NoShardAvailableError naming the picker', () => {
    const { router } = routingRooms(ABC, { picker: firstPicker(() => undefined) });
    const route = router.route(newRun(), 0);
    expect(route).toBeInstanceOf(NoShardAvailableError);
    expect((route as Error).message).toContain('picker "first" chose none of the 3 shard(s)');
  });

  it('a throw is wrapped in a PickerError with its cause; a shardwise error is kept as it is', () => {
    const boom = new Error('boom');
    const thrown = routingRooms(ABC, {
      picker: firstPicker(() => {
        throw boom;
      }),
    }).router.route(newRun(), 0);
    expect(thrown).toBeInstanceOf(PickerError);
    expect((thrown as Error).cause).toBe(boom);
    const own = new PushBackError(5);
    const kept = routingRooms(ABC, {
      picker: firstPicker(() => {
        throw own;
      }),
    }).router.route(newRun(), 0);
    expect(kept).toBe(own);
  });

  it('unfreezes the load figures’ clock after the pick, even when the picker throws', () => {
    const rooms = routingRooms(ABC, {
      picker: firstPicker(() => {
        throw new Error('boom');
      }),
    });
    rooms.router.route(newRun(), 500);
    rooms.clock.advance(1_000);
    // The shards' ticker reads the real clock again: a push-back held now ends 10 ms from now.
    const a = rooms.shard('a');
    a.holdPushBack(10);
    expect(a.pushBack.untilMs).toBe(1_010);
  });
});

describe('Router: strict keyed runs', () => {
  const homes = { k1: 'b', k2: 'c' };

  it('go to their home when it can take them, whatever the picker would choose', () => {
    const rooms = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    expect(rooms.router.strict).toBe(true);
    const run = newRun({ key: 'k1' });
    expect(rooms.router.route(run, 0)).toBe(rooms.shard('b'));
    expect(run.keyed?.home).toBe(rooms.shard('b'));
  });

  it('park at their home, saying why: capped, ejected or pushing back', () => {
    const rooms = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    rooms.fill('b');
    const capped = newRun({ key: 'k1' });
    expect(rooms.router.route(capped, 0)).toBe(PARK);
    expect(capped.keyed?.waitReason).toBe('capped');

    rooms.eject('c');
    const ejected = newRun({ key: 'k2' });
    expect(rooms.router.route(ejected, 0)).toBe(PARK);
    expect(ejected.keyed?.waitReason).toBe('ejected');

    const pushing = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    pushing.shard('b').holdPushBack(100);
    const pushed = newRun({ key: 'k1' });
    expect(pushing.router.route(pushed, 0)).toBe(PARK);
    expect(pushed.keyed?.waitReason).toBe('pushback');
    expect(pushing.router.route(newRun({ key: 'k1' }), 100)).toBe(pushing.shard('b'));
  });

  it('use an ejected home in panic', () => {
    const rooms = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    rooms.eject('b');
    rooms.setPanic(true);
    expect(rooms.router.route(newRun({ key: 'k1' }), 0)).toBe(rooms.shard('b'));
  });

  it('canTake answers for a home as route does: not ejected, not pushing back, below its cap', () => {
    const rooms = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    const b = rooms.shard('b');
    expect(rooms.router.canTake(b, 0)).toBe(true);
    b.holdPushBack(50);
    expect(rooms.router.canTake(b, 0)).toBe(false);
    expect(rooms.router.canTake(b, 50)).toBe(true);
    rooms.fill('b');
    expect(rooms.router.canTake(b, 50)).toBe(false);
  });

  it('strictHome names the home of a strict keyed run only', () => {
    const strict = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    expect(strict.router.strictHome(newRun({ key: 'k2' }), 0)).toBe(strict.shard('c'));
    expect(strict.router.strictHome(newRun(), 0)).toBeUndefined();
    const spill = routingRooms(ABC, { picker: tablePicker(homes, 'spill') });
    expect(spill.router.strict).toBe(false);
    expect(spill.router.strictHome(newRun({ key: 'k2' }), 0)).toBeUndefined();
  });

  it('asks the picker for a run’s home once per membership version, again after a change', () => {
    const picker = tablePicker(homes, 'strict');
    const rooms = routingRooms(ABC, { picker });
    const run = newRun({ key: 'k1' });
    rooms.router.route(run, 0);
    rooms.router.route(run, 1);
    expect(picker.calls.home).toBe(1);
    // b leaves: the key's home moves to the first shard of its order left.
    rooms.install([rooms.shard('a'), rooms.shard('c')]);
    expect(rooms.router.route(run, 2)).toBe(rooms.shard('a'));
    expect(picker.calls.home).toBe(2);
  });

  it('homeOf answers for a keyed picker only', () => {
    const keyed = routingRooms(ABC, { picker: tablePicker(homes, 'strict') });
    expect(keyed.router.homeOf('k2', 0)).toBe(keyed.shard('c'));
    expect(routingRooms(ABC, { picker: firstPicker() }).router.homeOf('k2', 0)).toBeUndefined();
  });

  it('a home the rule does not allow is never used: the home is found among the rule’s shards', () => {
    const rooms = routingRooms(
      [
        { id: 'a', labels: { region: 'eu' } },
        { id: 'b', labels: { region: 'us' } },
        { id: 'c', labels: { region: 'eu' } },
      ],
      { picker: tablePicker(homes, 'strict') },
    );
    // k1's home is b (us); among the eu shards its order's first is a.
    const run = newRun({ key: 'k1', requirement: rooms.rule({ region: 'eu' }) });
    expect(rooms.router.route(run, 0)).toBe(rooms.shard('a'));
  });
});

describe('Router: keyed runs that may spill', () => {
  const homes = { k1: 'b' };

  it('go home when they can, with no displacement', () => {
    const rooms = routingRooms(ABC, { picker: tablePicker(homes, 'spill') });
    const run = newRun({ key: 'k1' });
    expect(rooms.router.route(run, 0)).toBe(rooms.shard('b'));
    expect(run.keyed?.displaced).toBeUndefined();
    expect(run.reason).toBe('direct');
  });

  it('go elsewhere when the home is capped, ejected or already tried, each a classified displacement', () => {
    const capped = routingRooms(ABC, { picker: tablePicker(homes, 'spill') });
    capped.fill('b');
    const c = newRun({ key: 'k1' });
    expect(capped.router.route(c, 0)).toBe(capped.shard('a'));
    expect([c.keyed?.displaced, c.reason]).toEqual(['capped', 'displaced:capped']);

    const ejected = routingRooms(ABC, { picker: tablePicker(homes, 'spill') });
    ejected.eject('b');
    const e = newRun({ key: 'k1' });
    expect(ejected.router.route(e, 0)).toBe(ejected.shard('a'));
    expect(e.keyed?.displaced).toBe('ejected');

    const retry = routingRooms(ABC, { picker: tablePicker(homes, 'spill') });
    const r = triedOn(newRun({ key: 'k1' }), retry.shard('b'));
    expect(retry.router.route(r, 0)).toBe(retry.shard('a'));
    expect(r.keyed?.displaced).toBe('retry');
  });

  it('a home that pushes back counts as capped (load, not ill health)', () => {
    const rooms = routingRooms(ABC, { picker: tablePicker(homes, 'spill') });
    rooms.shard('b').holdPushBack(100);
    rooms.candidates.pushedBack(100);
    const run = newRun({ key: 'k1' });
    expect(rooms.router.route(run, 0)).toBe(rooms.shard('a'));
    expect(run.keyed?.displaced).toBe('capped');
  });
});
