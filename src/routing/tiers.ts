/**
 * The `prefer` tiers and their spill: the tiers compiled against the first membership, each
 * shard's tier assigned at every membership change (a shard no tier names is in the last,
 * implicit one), and when a run held by a saturated tier may spill to the next — with the one
 * timer that wakes the queue for the earliest such run. The candidate set asks it which tier a
 * shard is in and whether a run spills; the spill's clock lives here alone.
 */
import type { Clock } from '../base/types.js';
import type { Shard } from '../load/shard.js';
import {
  type CompiledRequirement,
  compileRequirement,
  type Requirement,
  satisfies,
} from './requirement.js';

/** What the tiers need from the balancer. */
export interface TiersHost {
  readonly clock: Clock;
  /** How long a run waits for a saturated tier before it spills to the next. */
  readonly spillAfterMs: number;
  /** Wakes the queue (a run waiting for a saturated tier may spill now). */
  pump(): void;
}

export class Tiers {
  #compiled: readonly CompiledRequirement[] | undefined;
  readonly #prefer: readonly Requirement[];
  readonly #host: TiersHost;
  #cancelTimer: (() => void) | undefined;
  #timerAt = Number.POSITIVE_INFINITY;

  constructor(prefer: readonly Requirement[], host: TiersHost) {
    this.#prefer = prefer;
    this.#host = host;
  }

  /** The tiers, compiled against the first membership (undefined before it). */
  get compiled(): readonly CompiledRequirement[] | undefined {
    return this.#compiled;
  }

  /** The membership changed: each shard's tier (compiled once, on the first). */
  install(shards: readonly Shard<unknown>[]): void {
    this.#compiled ??= this.#prefer.map((tier, i) =>
      compileRequirement(`prefer[${i}]`, tier, shards),
    );
    const tiers = this.#compiled;
    for (const shard of shards) {
      const t = tiers.findIndex((tier) => satisfies(shard, tier));
      shard.tier = t < 0 ? tiers.length : t;
    }
  }

  /**
   * True when `run`, held by a saturated tier, may spill to the next now: it has waited
   * `spillAfterMs` in the queue (a run not queued yet, routed at admission, has waited from
   * `nowMs`, so with 0 it spills at once as it would from the queue). When it may not, a queued
   * run's spill time arms the wake-up.
   */
  maySpill(run: { readonly queued: boolean; readonly queuedAtMs: number }, nowMs: number): boolean {
    const spillAt = (run.queued ? run.queuedAtMs : nowMs) + this.#host.spillAfterMs;
    if (this.#host.clock.now() >= spillAt) return true;
    if (run.queued) this.#arm(spillAt);
    return false;
  }

  /** Stops the wake-up (the balancer closed and every run settled). */
  stop(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  /** Wakes the queue at `atMs`, unless a wake-up comes sooner already. */
  #arm(atMs: number): void {
    if (atMs >= this.#timerAt) return;
    this.#cancelTimer?.();
    this.#timerAt = atMs;
    this.#cancelTimer = this.#host.clock.setTimer(() => {
      this.#cancelTimer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      this.#host.pump();
    }, atMs - this.#host.clock.now());
  }
}
