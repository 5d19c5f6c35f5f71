/**
 * The routing rooms on their own, built as the balancer builds them but with nothing above them:
 * real `Shard`s on a `ManualClock`, a plain membership object (`{ shards, version }`, what the
 * candidate set and the router declare they read), the `Availability` room, the `CandidateSet`
 * and the `Router`. Runs are made directly, as admission makes them.
 */
import { Run } from '../../src/admission/run.js';
import type { CompiledRequirement, Key, Picker, Requirement } from '../../src/base/types.js';
import { Shard } from '../../src/load/shard.js';
import { TickClock } from '../../src/load/tick.js';
import { Availability } from '../../src/routing/availability.js';
import { CandidateSet } from '../../src/routing/candidates.js';
import { Router } from '../../src/routing/router.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

export interface RoomShard {
  id: string;
  labels?: Record<string, string>;
  /** Its cap (default 2). */
  limit?: number;
}

export interface RoutingOptions {
  picker: Picker;
  prefer?: Requirement[];
  spillAfterMs?: number;
}

export function routingRooms(specs: readonly RoomShard[], options: RoutingOptions) {
  const clock = new ManualClock();
  const ticker = new TickClock(clock);
  const membership = { shards: [] as Shard<string>[], version: 0 };
  let panic = false;
  const availability = new Availability<string>({
    members: () => membership.shards,
    inPanic: () => panic,
    panicChanged: () => {},
  });
  const pumps = { count: 0 };
  const candidates = new CandidateSet<string>(
    {
      clock,
      spillAfterMs: options.spillAfterMs ?? 0,
      membership,
      availability,
      pump: () => pumps.count++,
    },
    options.prefer,
  );
  const make = (spec: RoomShard, i: number) =>
    new Shard<string>(
      { id: spec.id, target: spec.id, ...(spec.labels ? { labels: spec.labels } : {}) },
      i,
      spec.limit ?? 2,
      ticker,
      {},
    );
  /** Installs a membership as `Membership.install` does: indexes, picker, version, then rooms. */
  const install = (shards: Shard<string>[]) => {
    shards.forEach((s, i) => {
      s.index = i;
    });
    options.picker.rebuild?.(shards);
    membership.shards = shards;
    membership.version++;
    candidates.installed(shards);
  };
  install(specs.map(make));
  const inFlight = { count: 0 };
  const router = new Router<string>({
    picker: options.picker,
    random: seededRandom(1),
    ticker,
    candidates,
    membership,
    inFlight: () => inFlight.count,
  });
  const shard = (id: string) => membership.shards.find((s) => s.id === id)!;
  return {
    clock,
    membership,
    availability,
    candidates,
    router,
    pumps,
    inFlight,
    install,
    make,
    shard,
    /** Fills every slot of `id` through the availability room (as attempts do). */
    fill(id: string) {
      const s = shard(id);
      while (s.hasRoom) availability.take(s, 0);
    },
    /** Ejects `id` (outside panic) and recounts, as health's change does. */
    eject(id: string) {
      shard(id).health.state = 'ejected';
      availability.recount();
    },
    setPanic(on: boolean) {
      panic = on;
      availability.recount();
    },
    rule(value: Requirement): CompiledRequirement {
      return candidates.rule('require', value);
    },
  };
}

/** A run as admission makes it: no attempt yet, admitted at `nowMs`. */
export function newRun(
  options: { key?: Key; requirement?: CompiledRequirement; nowMs?: number } = {},
): Run<string> {
  return new Run<string>(
    async () => undefined,
    options.key,
    undefined,
    Number.POSITIVE_INFINITY,
    true,
    0,
    options.requirement,
    options.nowMs ?? 0,
    () => {},
    () => {},
  );
}

/** A failed attempt on `shard`, as the retry policy notes one: the run retries elsewhere. */
export function triedOn(run: Run<string>, ...shards: Shard<string>[]): Run<string> {
  run.attempt += shards.length;
  run.tried = [...(run.tried ?? []), ...shards];
  return run;
}

/** A picker that records what it was offered and takes the first (or a chosen) one. */
export function firstPicker(choose?: (offered: readonly Shard<string>[]) => unknown) {
  const offers: string[][] = [];
  const picker: Picker & { offers: string[][] } = {
    name: 'first',
    offers,
    pick(shards) {
      offers.push(shards.map((s) => s.id));
      return (choose ? choose(shards as readonly Shard<string>[]) : shards[0]) as Shard<string>;
    },
  };
  return picker;
}

/**
 * A keyed picker whose homes are a table (`key → shard id`); `pick` walks the key's order: its
 * home first, then the membership order. Counts `home()` calls.
 */
export function tablePicker(homes: Record<string, string>, affinity: 'strict' | 'spill') {
  const calls = { home: 0 };
  const order = (shards: readonly { id: string }[], key: Key) => {
    const id = homes[String(key)];
    const home = shards.find((s) => s.id === id);
    return home === undefined ? [...shards] : [home, ...shards.filter((s) => s !== home)];
  };
  const picker: Picker & { calls: { home: number } } = {
    name: 'table',
    keyed: true,
    affinity,
    calls,
    pick: (shards, request) => order(shards, request.key!)[0] as never,
    home: (shards, key) => {
      calls.home++;
      return order(shards, key)[0] as never;
    },
  };
  return picker;
}
