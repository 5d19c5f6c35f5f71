/**
 * The candidate set: which shards one attempt may use, answered once per pick from a snapshot of
 * the membership (grpc-js's picker-as-snapshot, Finagle's Distributor). It owns the hard rules
 * (compiled once, a membership mask each) and the shards a retry already tried; it asks
 * availability (cap, ejection, panic) who may take work, and the tiers (`tiers.ts`) which tier a
 * shard is in and when a run spills.
 *
 * The never-broken guarantee lives here: a run's rule is applied before health, panic, retries
 * and spill, so no attempt is ever offered a shard outside it.
 */

import type { Run } from '../admission/run.js';
import type { RouteReason } from '../base/events.js';
import type { Clock } from '../base/types.js';
import type { Shard } from '../load/shard.js';
import type { Availability } from './availability.js';
import {
  type CompiledRequirement,
  compileRequirement,
  type Requirement,
  satisfies,
  stillSays,
} from './requirement.js';
import { Tiers, type TiersHost } from './tiers.js';

const NONE: readonly never[] = [];
/** The cache key of runs without a rule. */
const NO_RULE = {};

/** A cached list of the members one rule (or tier) allows, for one membership version. */
interface Members<T> {
  version: number;
  tier: number;
  mask: Uint8Array;
  members: readonly Shard<T>[];
}

/** What the candidate set needs from the balancer (the tiers' needs among them). */
export interface CandidateHost<T> extends TiersHost {
  readonly clock: Clock;
  /** The live membership (`shards`) and its version. */
  readonly membership: { readonly shards: readonly Shard<T>[]; readonly version: number };
  /** Who may take work now (panic, slots, ejection): the one owner of that answer. */
  readonly availability: Availability<T>;
}

export class CandidateSet<T> {
  /** The `prefer` tiers and their spill (none without `prefer`). */
  readonly #tierRoom: Tiers | undefined;
  /** Its compiled tiers, kept here: read on every pick. */
  #tiers: readonly CompiledRequirement[] | undefined;
  readonly #host: CandidateHost<T>;
  readonly #scratch: Shard<T>[] = [];
  #rules = new WeakMap<object, CompiledRequirement>();
  readonly #masks = new WeakMap<CompiledRequirement, Members<T>>();
  readonly #firstTiers = new WeakMap<object, Members<T>>();
  #offerEpoch = 0;
  #offered = new Uint32Array(0);
  /** Set when the pending pick's candidates are a cached member list (their mask). */
  #listMask: Uint8Array | undefined;
  /** The latest end of any shard's push-back: until then, pushed-back shards are filtered. */
  #pushBackUntil = Number.NEGATIVE_INFINITY;

  constructor(host: CandidateHost<T>, prefer: readonly Requirement[] | undefined) {
    this.#host = host;
    this.#tierRoom = prefer === undefined ? undefined : new Tiers(prefer, host);
  }

  /** The `prefer` tiers, compiled against the first membership. */
  get tiers(): readonly CompiledRequirement[] | undefined {
    return this.#tiers;
  }

  // ——— rules ———

  /**
   * A run's rule, checked against the membership and compiled once per rule object (loaders
   * usually pass the same few objects), again when the object was changed since; the cache is
   * dropped when the membership changes.
   */
  rule(field: string, value: Requirement): CompiledRequirement {
    const shards = this.#host.membership.shards;
    if (typeof value !== 'object' || value === null)
      return compileRequirement(field, value, shards);
    let rule = this.#rules.get(value);
    if (rule === undefined || !stillSays(rule, value)) {
      rule = compileRequirement(field, value, shards);
      this.#rules.set(value, rule);
      this.#membersOf(rule);
    }
    return rule;
  }

  /** The members a rule allows (all without one), in membership order. */
  members(rule: CompiledRequirement | undefined): readonly Shard<T>[] {
    return rule === undefined ? this.#host.membership.shards : this.#membersOf(rule).members;
  }

  /** True when `shard` satisfies the rule (a mask lookup). */
  allows(rule: CompiledRequirement, shard: Shard<T>): boolean {
    return this.#membersOf(rule).mask[shard.index] === 1;
  }

  /** True when some member satisfies the rule. */
  admits(rule: CompiledRequirement): boolean {
    return this.#membersOf(rule).members.length > 0;
  }

  // ——— availability ———

  /** Who may take work now: the room that owns slots, ejection and panic. */
  get availability(): Availability<T> {
    return this.#host.availability;
  }

  /** Panic mode (the availability room's): ejection is ignored. */
  get panic(): boolean {
    return this.#host.availability.panic;
  }

  available(shard: Shard<T>): boolean {
    return this.#host.availability.available(shard);
  }

  /**
   * A shard pushed back until `untilMs`. Until then it is offered only when no other shard the run
   * may use is free of push-back — so even a load-blind picker (round robin) spares it; when
   * every shard pushes back they are all offered, and load-aware pickers order them by penalty.
   */
  pushedBack(untilMs: number): void {
    if (untilMs > this.#pushBackUntil) this.#pushBackUntil = untilMs;
  }

  /** The membership changed: tiers are reassigned and every cached list dropped. */
  installed(shards: readonly Shard<T>[]): void {
    if (this.#tierRoom !== undefined) {
      this.#tierRoom.install(shards);
      this.#tiers = this.#tierRoom.compiled;
    }
    this.#rules = new WeakMap();
    if (this.#offered.length < shards.length) this.#offered = new Uint32Array(shards.length * 2);
    this.#host.availability.recount();
  }

  // ——— the candidates of one attempt ———

  /**
   * The shards to offer `run`, after its hard rule, health, caps and the shards it already tried.
   * The whole membership when all can take work and nothing filters (no copy); otherwise a
   * reused scratch array. With `prefer` tiers, the first tier that can take the run, or an empty
   * list while the run waits for a saturated tier (`spillAfterMs`). Sets `run.tier` and
   * `run.reason`.
   */
  forRun(run: Run<T>, nowMs: number): readonly Shard<T>[] {
    run.tier = -1;
    run.reason = 'direct';
    this.#listMask = undefined;
    const sparing = nowMs < this.#pushBackUntil;
    if (this.#host.availability.blocked === 0 && run.tried === undefined && !sparing) {
      if (this.#tiers === undefined) {
        if (run.requirement === undefined) return this.#host.membership.shards;
        // Every member can take work: the rule's members, listed once per membership, will do.
        const cached = this.#membersOf(run.requirement);
        if (cached.members.length > 0) {
          this.#listMask = cached.mask;
          return cached.members;
        }
      } else {
        // Every member can take work: the first tier the rule allows, listed once per membership.
        const first = this.#firstTier(run.requirement);
        if (first.members.length > 0) {
          run.tier = first.tier;
          run.reason = 'preferred';
          this.#listMask = first.mask;
          return first.members;
        }
      }
    }
    if (this.#tiers === undefined) return this.#collect(run, -1, sparing, nowMs, true);
    // A retry looks in every tier for a shard it has not tried before it goes back to one it did;
    // a shard pushing back is offered only when no tier has another (push-back is load: its tier
    // counts as saturated, so the run spills past it as past a busy tier).
    const untried = run.tried === undefined ? undefined : this.#tiered(run, sparing, nowMs, false);
    if (untried !== undefined) return untried;
    const any = this.#tiered(run, sparing, nowMs, true);
    if (any !== undefined || !sparing) return any ?? NONE;
    return this.#tiered(run, false, nowMs, true) ?? NONE;
  }

  /**
   * The first tier that can take `run` (`triedToo`: counting shards it tried), the list to wait
   * on (`NONE`) while a saturated tier holds it — or, for a retry looking for an untried shard,
   * while untried ones are only busy — or undefined when no tier has a shard for it.
   */
  #tiered(run: Run<T>, sparing: boolean, nowMs: number, triedToo: boolean) {
    const tiers = this.#tiers!;
    let reason: RouteReason = 'preferred';
    let busy = false;
    for (let t = 0; t <= tiers.length; t++) {
      const out = this.#gather(run, t, sparing, nowMs, triedToo);
      if (out.length > 0) {
        run.tier = t;
        run.reason = reason;
        return out;
      }
      const state = this.#tierState(run, t, triedToo);
      if (state === 'empty') continue;
      if (state !== 'saturated') {
        reason = state === 'tried' ? 'spill:retry' : 'spill:unhealthy';
        continue;
      }
      // A tier held only by push-back: with no later tier to spill to, its shards are offered
      // (push-back spares a shard only while another can take the run); with one, a retry spills
      // past it at once (it waits only its backoff), a first attempt as past a busy tier.
      if (sparing && this.#gather(run, t, false, nowMs, triedToo).length > 0) {
        if (!this.#laterTierTakes(run, t, nowMs)) {
          run.tier = t;
          run.reason = reason;
          return this.#gather(run, t, false, nowMs, triedToo);
        }
        if (run.tried !== undefined) {
          reason = 'spill:saturated';
          continue;
        }
      }
      busy = true;
      if (this.#tierRoom!.maySpill(run, nowMs)) {
        reason = 'spill:saturated';
        continue;
      }
      return NONE;
    }
    // An untried shard that is only busy is waited for rather than going back to a tried one.
    return !triedToo && busy ? NONE : undefined;
  }

  /**
   * True when a tier after `tier` has a shard that can take `run` now without pushing back — one
   * it tried included: a retry goes back to such a shard rather than to one pushing back.
   */
  #laterTierTakes(run: Run<T>, tier: number, nowMs: number): boolean {
    for (let t = tier + 1; t <= this.#tiers!.length; t++) {
      if (this.#gather(run, t, true, nowMs, true).length > 0) return true;
    }
    return false;
  }

  /** True when no shard `rule` allows is healthy: ejection is ignored among them (panic within the rule). */
  rulePanics(rule: CompiledRequirement | undefined): boolean {
    if (rule === undefined || this.panic) return false;
    const mask = this.#membersOf(rule).mask;
    for (const shard of this.#host.membership.shards) {
      if (shard.health.state !== 'ejected' && mask[shard.index] === 1) return false;
    }
    return true;
  }

  /** Stops the spill wake-up (the balancer closed and every run settled). */
  stopSpillTimer(): void {
    this.#tierRoom?.stop();
  }

  /** True when `shard` was one of `candidates`, the list `forRun` last returned. */
  offered(shard: Shard<T>, candidates: readonly Shard<T>[]): boolean {
    if (candidates === this.#host.membership.shards) return true;
    if (this.#listMask !== undefined) return this.#listMask[shard.index] === 1;
    return this.#offered[shard.index] === this.#offerEpoch;
  }

  /**
   * Fills the scratch list with the shards of tier `tier` (−1: any) that satisfy the run's rule,
   * can take a call, and were not tried by it — or, when that leaves none and `triedToo`, were
   * tried. When no
   * shard the rule allows is healthy, ejection is ignored inside the rule (panic within it).
   * `sparing`: shards pushing back at `nowMs` are left out while another can be offered.
   */
  #collect(
    run: Run<T>,
    tier: number,
    sparing: boolean,
    nowMs: number,
    triedToo: boolean,
  ): Shard<T>[] {
    const out = this.#gather(run, tier, sparing, nowMs, triedToo);
    return out.length === 0 && sparing ? this.#gather(run, tier, false, nowMs, triedToo) : out;
  }

  #gather(
    run: Run<T>,
    tier: number,
    sparing: boolean,
    nowMs: number,
    triedToo: boolean,
  ): Shard<T>[] {
    const out = this.#scratch;
    out.length = 0;
    const shards = this.#host.membership.shards;
    const rule = run.requirement;
    const epoch = ++this.#offerEpoch;
    const mask = rule === undefined ? undefined : this.#membersOf(rule).mask;
    const ruledPanic = this.rulePanics(rule);
    // A retry goes to a shard it has not tried; when those are only busy it waits for one, and
    // only when none is left (or all are ejected) it may go back to one it tried.
    let untriedWaiting = false;
    for (let pass = 0; pass < 2 && out.length === 0 && !untriedWaiting; pass++) {
      const tried = pass === 0 ? run.tried : undefined;
      for (const shard of shards) {
        if (tier >= 0 && shard.tier !== tier) continue;
        if (mask !== undefined && mask[shard.index] !== 1) continue;
        if (tried?.includes(shard)) continue;
        if (!(this.available(shard) || (ruledPanic && shard.hasRoom))) {
          if (shard.health.state !== 'ejected' || this.panic || ruledPanic) untriedWaiting = true;
          continue;
        }
        if (sparing && shard.pushedBackAt(nowMs)) continue;
        out.push(shard);
        this.#offered[shard.index] = epoch;
      }
      if (run.tried === undefined || !triedToo) break;
    }
    return out;
  }

  /** Which members satisfy `rule`, cached per membership version. */
  #membersOf(rule: CompiledRequirement): Members<T> {
    const version = this.#host.membership.version;
    let cached = this.#masks.get(rule);
    if (cached === undefined || cached.version !== version) {
      const shards = this.#host.membership.shards;
      const mask = new Uint8Array(shards.length);
      const members: Shard<T>[] = [];
      for (const shard of shards) {
        if (satisfies(shard, rule)) {
          mask[shard.index] = 1;
          members.push(shard);
        }
      }
      cached = { version, tier: -1, mask, members };
      this.#masks.set(rule, cached);
    }
    return cached;
  }

  /**
   * The members of the first tier that has any member `rule` allows (ignoring room and health:
   * for when every member can take work), cached per rule and membership version.
   */
  #firstTier(rule: CompiledRequirement | undefined): Members<T> {
    const key: object = rule ?? NO_RULE;
    const version = this.#host.membership.version;
    let cached = this.#firstTiers.get(key);
    if (cached === undefined || cached.version !== version) {
      const shards = this.#host.membership.shards;
      const mask = new Uint8Array(shards.length);
      const allowed = rule === undefined ? undefined : this.#membersOf(rule).mask;
      const members: Shard<T>[] = [];
      let tier = -1;
      for (let t = 0; t <= this.#tiers!.length && members.length === 0; t++) {
        for (const shard of shards) {
          if (shard.tier === t && (allowed === undefined || allowed[shard.index] === 1))
            members.push(shard);
        }
        tier = t;
      }
      for (const shard of members) mask[shard.index] = 1;
      cached = { version, tier, mask, members };
      this.#firstTiers.set(key, cached);
    }
    return cached;
  }

  /**
   * Why tier `t` offered `run` nothing: no member the rule allows, all tried (when `triedToo` is
   * false), none healthy, or none free.
   */
  #tierState(
    run: Run<T>,
    t: number,
    triedToo: boolean,
  ): 'empty' | 'tried' | 'unhealthy' | 'saturated' {
    const allowed =
      run.requirement === undefined ? undefined : this.#membersOf(run.requirement).mask;
    let members = 0;
    let untried = 0;
    let healthy = 0;
    for (const shard of this.#host.membership.shards) {
      if (shard.tier !== t || (allowed !== undefined && allowed[shard.index] !== 1)) continue;
      members++;
      if (!triedToo && run.tried?.includes(shard)) continue;
      untried++;
      if (shard.health.state !== 'ejected' || this.panic) healthy++;
    }
    if (members === 0) return 'empty';
    if (untried === 0) return 'tried';
    return healthy === 0 ? 'unhealthy' : 'saturated';
  }
}
