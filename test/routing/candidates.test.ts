/**
 * The candidate set through its own API (`forRun`, `offered`, `rule`, `members`,
 * `installed`, `rulePanics`): which shards one attempt may use — the rule first, then tiers and
 * their spill, availability, push-back, and the shards a retry already tried.
 */
import { describe, expect, it } from 'vitest';
import { firstPicker, newRun, routingRooms, triedOn } from './rooms.js';

const ABC = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
const ids = (list: readonly { id: string }[]) => list.map((s) => s.id);

describe('CandidateSet: one attempt’s candidates', () => {
  it('offers the membership itself, uncopied, when every member can take work', () => {
    const rooms = routingRooms(ABC, { picker: firstPicker() });
    const offered = rooms.candidates.forRun(newRun(), 0);
    expect(offered).toBe(rooms.membership.shards);
    expect(rooms.candidates.offered(rooms.shard('c'), offered)).toBe(true);
  });

  it('leaves out a capped or ejected shard, and `offered` says it was not offered', () => {
    const rooms = routingRooms(ABC, { picker: firstPicker() });
    rooms.fill('a');
    rooms.eject('c');
    const offered = rooms.candidates.forRun(newRun(), 0);
    expect(ids(offered)).toEqual(['b']);
    expect(rooms.candidates.offered(rooms.shard('a'), offered)).toBe(false);
    expect(rooms.candidates.offered(rooms.shard('b'), offered)).toBe(true);
    expect(rooms.candidates.offered(rooms.shard('c'), offered)).toBe(false);
  });

  it('offers ejected shards again in panic', () => {
    const rooms = routingRooms(ABC, { picker: firstPicker() });
    rooms.eject('a');
    rooms.setPanic(true);
    expect(rooms.candidates.panic).toBe(true);
    expect(ids(rooms.candidates.forRun(newRun(), 0))).toEqual(['a', 'b', 'c']);
  });

  it('a retry goes to a shard it has not tried; to a tried one only when none is left', () => {
    const rooms = routingRooms(ABC, { picker: firstPicker() });
    const run = triedOn(newRun(), rooms.shard('a'));
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['b', 'c']);
    triedOn(run, rooms.shard('b'), rooms.shard('c'));
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['a', 'b', 'c']);
  });

  it('a retry waits for an untried shard that is only busy rather than going back to a tried one', () => {
    const rooms = routingRooms([{ id: 'a' }, { id: 'b' }], { picker: firstPicker() });
    rooms.fill('b');
    const run = triedOn(newRun(), rooms.shard('a'));
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual([]);
    // An untried shard that is ejected is not waited for: the tried one is offered.
    const ejected = routingRooms([{ id: 'a' }, { id: 'b' }], { picker: firstPicker() });
    ejected.eject('b');
    const retry = triedOn(newRun(), ejected.shard('a'));
    expect(ids(ejected.candidates.forRun(retry, 0))).toEqual(['a']);
  });

  it('spares a shard that pushes back while another can be offered; offers all when all push back', () => {
    const rooms = routingRooms(ABC, { picker: firstPicker() });
    rooms.shard('a').holdPushBack(100);
    rooms.candidates.pushedBack(100);
    expect(ids(rooms.candidates.forRun(newRun(), 0))).toEqual(['b', 'c']);
    rooms.shard('b').holdPushBack(100);
    rooms.shard('c').holdPushBack(100);
    expect(ids(rooms.candidates.forRun(newRun(), 0))).toEqual(['a', 'b', 'c']);
    // Past the push-back nothing is spared, and the membership is offered as it is again.
    expect(rooms.candidates.forRun(newRun(), 100)).toBe(rooms.membership.shards);
  });
});

describe('CandidateSet: rules', () => {
  const ZONED = [
    { id: 'a', labels: { region: 'eu' } },
    { id: 'b', labels: { region: 'us' } },
    { id: 'c', labels: { region: 'eu' } },
  ];

  it('compiles a rule object once, again when the object changed or the membership did', () => {
    const rooms = routingRooms(ZONED, { picker: firstPicker() });
    const given: { region: string } = { region: 'eu' };
    const first = rooms.candidates.rule('require', given);
    expect(rooms.candidates.rule('require', given)).toBe(first);
    given.region = 'us';
    const changed = rooms.candidates.rule('require', given);
    expect(changed).not.toBe(first);
    expect(ids(rooms.candidates.members(changed))).toEqual(['b']);
    rooms.install([...rooms.membership.shards]);
    expect(rooms.candidates.rule('require', given)).not.toBe(changed);
  });

  it('members, allows and admits answer from the rule’s mask for the current membership', () => {
    const rooms = routingRooms(ZONED, { picker: firstPicker() });
    const eu = rooms.rule({ region: 'eu' });
    expect(ids(rooms.candidates.members(eu))).toEqual(['a', 'c']);
    expect(rooms.candidates.allows(eu, rooms.shard('b'))).toBe(false);
    expect(rooms.candidates.admits(eu)).toBe(true);
    // The eu shards leave: the same compiled rule now admits nobody.
    rooms.install([rooms.shard('b')]);
    expect(rooms.candidates.admits(eu)).toBe(false);
    expect(ids(rooms.candidates.members(undefined))).toEqual(['b']);
  });

  it('never offers a shard outside the rule, through retries, ejection and push-back', () => {
    const rooms = routingRooms(ZONED, { picker: firstPicker() });
    const eu = rooms.rule({ region: 'eu' });
    const run = triedOn(newRun({ requirement: eu }), rooms.shard('a'), rooms.shard('c'));
    rooms.shard('a').holdPushBack(100);
    rooms.candidates.pushedBack(100);
    // Both eu shards tried, one pushing back: the other, never b.
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['c']);
    rooms.shard('c').holdPushBack(100);
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['a', 'c']);
    rooms.eject('a');
    rooms.eject('c');
    expect(rooms.candidates.rulePanics(eu)).toBe(true);
    expect(ids(rooms.candidates.forRun(newRun({ requirement: eu }), 0))).toEqual(['a', 'c']);
    expect(rooms.candidates.rulePanics(rooms.rule({ region: 'us' }))).toBe(false);
  });
});

describe('CandidateSet: prefer tiers and their spill', () => {
  const SITES = [
    { id: 'op-1', labels: { site: 'onprem' }, limit: 1 },
    { id: 'op-2', labels: { site: 'onprem' }, limit: 1 },
    { id: 'cl-1', labels: { site: 'cloud' }, limit: 1 },
    { id: 'x-1', labels: { site: 'edge' }, limit: 1 },
  ];
  const prefer = [{ site: 'onprem' }, { site: 'cloud' }];

  it('gives each shard the first tier it satisfies, and the last one to shards in none', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer });
    expect(rooms.membership.shards.map((s) => [s.id, s.tier])).toEqual([
      ['op-1', 0],
      ['op-2', 0],
      ['cl-1', 1],
      ['x-1', 2],
    ]);
  });

  it('offers the first tier while it has room, marked preferred', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer });
    const run = newRun();
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['op-1', 'op-2']);
    expect([run.tier, run.reason]).toEqual([0, 'preferred']);
    rooms.fill('op-1');
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['op-2']);
    expect(run.tier).toBe(0);
  });

  it('spills past a saturated tier at once with spillAfterMs 0', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer });
    rooms.fill('op-1');
    rooms.fill('op-2');
    const run = newRun();
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['cl-1']);
    expect([run.tier, run.reason]).toEqual([1, 'spill:saturated']);
  });

  it('spills past an unhealthy tier, saying so', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer });
    rooms.eject('op-1');
    rooms.eject('op-2');
    const run = newRun();
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['cl-1']);
    expect([run.tier, run.reason]).toEqual([1, 'spill:unhealthy']);
  });

  it('a queued run waits spillAfterMs for a saturated tier; one timer wakes the queue when it may spill', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer, spillAfterMs: 100 });
    rooms.fill('op-1');
    rooms.fill('op-2');
    const run = newRun();
    run.queued = true;
    run.queuedAtMs = 0;
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual([]);
    rooms.clock.advance(40);
    expect(ids(rooms.candidates.forRun(run, 40))).toEqual([]);
    expect(rooms.clock.pendingTimers).toBe(1);
    expect(rooms.pumps.count).toBe(0);
    rooms.clock.advance(60);
    expect(rooms.pumps.count).toBe(1);
    expect(ids(rooms.candidates.forRun(run, 100))).toEqual(['cl-1']);
    expect(run.reason).toBe('spill:saturated');
  });

  it('stopSpillTimer leaves no timer behind', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer, spillAfterMs: 100 });
    rooms.fill('op-1');
    rooms.fill('op-2');
    const run = newRun();
    run.queued = true;
    rooms.candidates.forRun(run, 0);
    rooms.candidates.stopSpillTimer();
    rooms.clock.advance(1_000);
    expect(rooms.pumps.count).toBe(0);
  });

  it('a retry looks in every tier for a shard it has not tried before it goes back to one it did', () => {
    const rooms = routingRooms(SITES, { picker: firstPicker(), prefer });
    const run = triedOn(newRun(), rooms.shard('op-1'), rooms.shard('op-2'));
    expect(ids(rooms.candidates.forRun(run, 0))).toEqual(['cl-1']);
    expect([run.tier, run.reason]).toEqual([1, 'spill:retry']);
  });
});
