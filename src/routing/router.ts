/**
 * The route of one attempt: where it may go (the candidate set), what the picker chooses there,
 * and, for keyed runs, where the key's home is. Strict affinity (the default for keyed pickers,
 * Kafka's partitioner semantics) sends a keyed run to its home or makes it wait there; with
 * `affinity: 'spill'` a keyed run may go elsewhere, and every such move is a counted
 * displacement. A picker that throws, returns nothing from a non-empty list, or returns a shard
 * it was not offered fails the run with an error — never a hang.
 */

import { KeyedState, type Run } from '../admission/run.js';
import { isShardwiseError, NoShardAvailableError, PickerError } from '../base/errors.js';
import type { Key, Picker, PickRequest, RandomSource, ShardState } from '../base/types.js';
import { Shard } from '../load/shard.js';
import type { DisplacementReason } from '../load/stats.js';
import type { TickClock } from '../load/tick.js';
import type { CandidateSet } from './candidates.js';
import type { CompiledRequirement } from './requirement.js';

/** The run must wait in the balancer's queue for a slot. */
export const WAIT = 'wait';
/** The run waits in its home's line (`run.keyed.home`, `run.keyed.waitReason` say where, why). */
export const PARK = 'park';

/** Where an attempt goes: a shard, a wait, or the error that ends the run. */
export type Route<T> = Shard<T> | typeof WAIT | typeof PARK | Error;

/** What the router needs from the balancer. */
export interface RouterHost<T> {
  readonly picker: Picker;
  readonly random: RandomSource;
  readonly ticker: TickClock;
  readonly candidates: CandidateSet<T>;
  /** The live membership (`shards`) and its version. */
  readonly membership: { readonly shards: readonly Shard<T>[]; readonly version: number };
  inFlight(): number;
}

export class Router<T> {
  readonly #host: RouterHost<T>;
  readonly #picker: Picker;
  /** Keyed runs go to their home, or wait for it. */
  readonly #strict: boolean;
  readonly #request: PickRequest;

  constructor(host: RouterHost<T>) {
    this.#host = host;
    this.#picker = host.picker;
    this.#strict = host.picker.keyed === true && host.picker.affinity !== 'spill';
    this.#request = { key: undefined, attempt: 1, random: host.random, totalInFlight: 0, now: 0 };
  }

  /** True when keyed runs keep to their home shard. */
  get strict(): boolean {
    return this.#strict;
  }

  /** Routes `run`'s next attempt at time `nowMs`. Sets `run.tier`, `run.reason` (and `run.keyed.displaced`). */
  route(run: Run<T>, nowMs: number): Route<T> {
    if (this.#host.membership.shards.length === 0) {
      return new NoShardAvailableError('the balancer has no shards: add one with addShard()');
    }
    const keyed = run.key !== undefined && this.#picker.keyed === true;
    if (keyed && this.#strict) return this.#routeHome(run, nowMs);
    const candidates = this.#host.candidates.forRun(run, nowMs);
    if (candidates.length === 0) {
      const rule = run.requirement;
      if (rule !== undefined && !this.#host.candidates.admits(rule)) {
        return new NoShardAvailableError(
          `no shard satisfies the run's rule (${rule.text}); it was sent nowhere`,
        );
      }
      return WAIT;
    }
    const picked = this.#pick(candidates, run, nowMs);
    if (!(picked instanceof Error) && keyed) {
      const home = this.home(run, nowMs);
      if (home instanceof Error) return home;
      const keyed = run.keyed!;
      // A home in a later tier than the run's is not a displacement: the run went where the
      // tiers prefer (its reason says so), as any run would.
      const tiered =
        this.#host.candidates.tiers !== undefined && home !== undefined && home.tier > run.tier;
      keyed.displaced =
        home !== undefined && home !== picked && !tiered
          ? this.#displacement(run, home, nowMs)
          : undefined;
      if (keyed.displaced !== undefined) run.reason = `displaced:${keyed.displaced}`;
    }
    return picked;
  }

  /**
   * The home a strict keyed run may use alone, as it is now (the membership may have changed
   * since its attempt started); undefined for any other run.
   */
  strictHome(run: Run<T>, nowMs: number): Shard<T> | undefined {
    if (!this.strict || run.key === undefined) return undefined;
    const home = this.home(run, nowMs);
    return home instanceof Shard ? home : undefined;
  }

  /**
   * The home of `run`'s key: the first shard of the key's order among the members its rule
   * allows (the picker's `home()`, or its choice among all of them). Cached per membership.
   */
  home(run: Run<T>, nowMs: number): Shard<T> | undefined | Error {
    const version = this.#host.membership.version;
    if (run.keyed === undefined) run.keyed = new KeyedState<T>();
    const keyed = run.keyed;
    if (keyed.version === version) return keyed.home;
    const home = this.#home(run.key!, run.requirement, run.attempt, nowMs);
    if (home instanceof Error) return home;
    keyed.home = home;
    keyed.version = version;
    return home;
  }

  /** The home of `key` among all members (no rule), or undefined for a picker not keyed. */
  homeOf(key: Key, nowMs: number): Shard<T> | undefined | Error {
    if (this.#picker.keyed !== true) return undefined;
    return this.#home(key, undefined, 0, nowMs);
  }

  /**
   * True when a strict keyed run (with `rule`) may start on `shard` now (its home): not ejected
   * (or in panic, or every shard its rule allows is ejected), not pushing back, below its cap.
   */
  canTake(shard: Shard<T>, nowMs: number, rule?: CompiledRequirement): boolean {
    const candidates = this.#host.candidates;
    return candidates.availability.why(shard, nowMs, candidates.rulePanics(rule)) === undefined;
  }

  #home(
    key: Key,
    rule: CompiledRequirement | undefined,
    attempt: number,
    nowMs: number,
  ): Shard<T> | undefined | Error {
    const members = this.#host.candidates.members(rule);
    return members.length === 0
      ? undefined
      : this.#call(members, key, attempt, rule, nowMs, 'home');
  }

  /** Strict affinity: the home if it can take the run, else a wait in its line. */
  #routeHome(run: Run<T>, nowMs: number): Route<T> {
    const home = this.home(run, nowMs);
    if (home instanceof Error) return home;
    run.tier = -1;
    run.reason = 'direct';
    if (home === undefined) {
      return new NoShardAvailableError(
        `no shard satisfies the run's rule (${run.requirement?.text}); it was sent nowhere`,
      );
    }
    const candidates = this.#host.candidates;
    const why = candidates.availability.why(home, nowMs, candidates.rulePanics(run.requirement));
    if (why === undefined) {
      if (candidates.tiers !== undefined) run.tier = home.tier;
      return home;
    }
    run.keyed!.waitReason = why;
    return PARK;
  }

  /** `home` is ejected for `run`: no panic, overall or within the run's rule, lets it be used. */
  #unusable(home: Shard<T>, run: Run<T>): boolean {
    const candidates = this.#host.candidates;
    return (
      home.health.state === 'ejected' &&
      !candidates.panic &&
      !candidates.rulePanics(run.requirement)
    );
  }

  /** Why `run` does not run on `home` (`capped`: no room, or pushing back — load either way). */
  #displacement(run: Run<T>, home: Shard<T>, nowMs: number): DisplacementReason {
    if (run.tried?.includes(home)) return 'retry';
    if (this.#unusable(home, run)) return 'ejected';
    if (!home.hasRoom || home.pushedBackAt(nowMs)) return 'capped';
    return 'bounded';
  }

  #pick(candidates: readonly Shard<T>[], run: Run<T>, nowMs: number): Shard<T> | Error {
    const picked = this.#call(candidates, run.key, run.attempt, run.requirement, nowMs, 'pick');
    if (picked === undefined) {
      return new NoShardAvailableError(
        `picker "${this.#picker.name}" chose none of the ${candidates.length} shard(s) it was offered`,
      );
    }
    return picked;
  }

  /**
   * Calls the picker with the load figures frozen at `nowMs` — for a `'home'`, its `home()` (or,
   * without one, its choice among every member the rule allows) — and checks that what it
   * returned is one of `offered`.
   */
  #call(
    offered: readonly Shard<T>[],
    key: Key | undefined,
    attempt: number,
    rule: CompiledRequirement | undefined,
    nowMs: number,
    purpose: 'home' | 'pick',
  ): Shard<T> | undefined | Error {
    const home = purpose === 'home' && this.#picker.home !== undefined;
    const request = this.#request;
    request.key = key;
    request.attempt = attempt + 1;
    request.totalInFlight = this.#host.inFlight();
    request.now = nowMs;
    const ticker = this.#host.ticker;
    ticker.tick = nowMs;
    ticker.frozen = true;
    let picked: ShardState | undefined | null;
    try {
      picked = home ? this.#picker.home!(offered, key!) : this.#picker.pick(offered, request);
    } catch (error) {
      return isShardwiseError(error)
        ? error
        : new PickerError(
            `picker "${this.#picker.name}" threw: ${String((error as Error)?.message ?? error)}`,
            { cause: error },
          );
    } finally {
      ticker.frozen = false;
    }
    if (picked === undefined) return undefined;
    const shard = picked as Shard<T>;
    const offeredOne =
      typeof picked === 'object' &&
      picked !== null &&
      this.#host.membership.shards[shard.index] === shard &&
      (purpose === 'home'
        ? rule === undefined || this.#host.candidates.allows(rule, shard)
        : this.#host.candidates.offered(shard, offered));
    if (!offeredOne) {
      return new PickerError(
        `picker "${this.#picker.name}" returned ${describeShard(picked)}, which is not one of the shards it was offered`,
      );
    }
    return shard;
  }
}

function describeShard(value: unknown): string {
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { id?: unknown }).id === 'string'
  ) {
    return `shard "${(value as { id: string }).id}"`;
  }
  return String(value);
}
