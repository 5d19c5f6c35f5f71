/**
 * The balancer's figures: what `stats()` returns, the counters behind it, and the snapshot. The
 * balancer and its rooms call the counting methods; nothing here decides anything.
 */

import type { DisplacedCounts, DisplacementReason, TransitBytes } from '../base/types.js';
import type { Shard } from './shard.js';
import type { TransitLedger } from './transit.js';

export type { DisplacedCounts, DisplacementReason } from '../base/types.js';

/** One shard in `stats()`. */
export interface ShardStats {
  id: string;
  inFlight: number;
  ewmaMs: number;
  requests: number;
  failures: number;
  ejected: boolean;
  ejections: number;
  /**
   * The shard's effective in-flight cap: a fixed cap scaled by its weight,
   * `max(1, round(maxInFlightPerShard × weight / mean weight))` (the cap itself with equal
   * weights), or its adaptive limit now.
   */
  limit: number;
  /** Keyed attempts whose home this shard was, sent to another shard. */
  displaced: DisplacedCounts;
  /** Body bytes its attempts sent (before and after compression) and received. */
  bytes: TransitBytes;
}

/** A plain snapshot of the balancer's figures. */
export interface BalancerStats {
  /** Runs waiting for their first attempt (what `maxQueued` and `ready()` bound). */
  queued: number;
  /** Admitted runs waiting to retry after a failed attempt (backing off or for a slot). */
  retrying: number;
  inFlight: number;
  /** Runs that succeeded. */
  completed: number;
  /** Admitted runs that rejected. */
  failed: number;
  /**
   * `run()` calls turned away before admission, each rejected at once: invalid arguments, the
   * balancer closed, the caller's signal already aborted, or the queue full (`QueueFullError`).
   * The transports' `request()`, `putObject()` and `upload()` count their invalid requests here.
   * Every call is counted once: `completed + failed + refused` is the number of settled calls.
   */
  refused: number;
  /** Retry attempts started. */
  retries: number;
  /** Retries refused by the retry budget. */
  budgetExhausted: number;
  /** Keys sent past their first choice by a bounded-load picker. */
  spills: number;
  /** Keyed attempts that did not run on their key's home shard, by reason. */
  displaced: DisplacedCounts;
  /** Panic mode is on (too few healthy shards: ejection ignored). */
  panic: boolean;
  shards: ShardStats[];
  /**
   * Body bytes sent (`raw` before compression, `wire` after) and received, over every attempt
   * since the balancer was made (shards that left included), as transports report them.
   */
  bytes: TransitBytes;
  /**
   * Per `prefer` tier, in tier order (empty without tiers): attempts started, the `bytes` those
   * runs declared (`RunOptions.bytes`, what byte-aware load counts), and the body bytes reported
   * (`transit`).
   */
  tiers: { tier: number; requests: number; bytes: number; transit: TransitBytes }[];
  /** Attempts and declared bytes per label value: `labels.region.eu.requests`. */
  labels: Record<string, Record<string, { requests: number; bytes: number }>>;
  /**
   * Body bytes per value of the `transitLabel` (`transit.region.eu.wire`); empty without one.
   * Shards without the label are counted in `bytes` only.
   */
  transit: Record<string, Record<string, TransitBytes>>;
}

/** The counters of a balancer. */
export class Figures {
  completed = 0;
  failed = 0;
  refused = 0;
  retries = 0;
  budgetExhausted = 0;
  readonly displaced: DisplacedCounts = { total: 0, capped: 0, ejected: 0, retry: 0, bounded: 0 };
  readonly tiers: { tier: number; requests: number; bytes: number }[] = [];
  readonly labels = new Map<string, Map<string, { requests: number; bytes: number }>>();

  /** `transit`: the bytes attempts reported (the ledger writes each shard's `transit` too). */
  constructor(readonly transit: TransitLedger) {}

  /** Starts the per-tier counters (`tiers` tiers plus the last, implicit one). */
  useTiers(tiers: number): void {
    for (let t = 0; t <= tiers; t++) this.tiers.push({ tier: t, requests: 0, bytes: 0 });
    this.transit.useTiers(tiers);
  }

  /** An attempt started on `shard`, in `tier` (−1: no tiers), carrying `bytes`. */
  attempt(shard: Shard<unknown>, tier: number, bytes: number): void {
    shard.requests++;
    if (tier >= 0) {
      const figures = this.tiers[tier]!;
      figures.requests++;
      figures.bytes += bytes;
    }
    for (const label in shard.labels) this.#count(label, shard.labels[label]!, bytes);
    // A zone is the label `zone` when the labels do not set one (as rules read it).
    if (shard.zone !== undefined && shard.labels.zone === undefined) {
      this.#count('zone', shard.zone, bytes);
    }
  }

  #count(label: string, value: string, bytes: number): void {
    let values = this.labels.get(label);
    if (values === undefined) {
      values = new Map();
      this.labels.set(label, values);
    }
    const figures = values.get(value);
    if (figures === undefined) values.set(value, { requests: 1, bytes });
    else {
      figures.requests++;
      figures.bytes += bytes;
    }
  }

  /** A keyed attempt went elsewhere than its `home`. */
  displace(home: Shard<unknown>, reason: DisplacementReason): void {
    this.displaced.total++;
    this.displaced[reason]++;
    home.displaced.total++;
    home.displaced[reason]++;
  }

  /** The snapshot `stats()` returns: plain objects only, nothing live. */
  snapshot(
    shards: readonly Shard<unknown>[],
    live: { queued: number; retrying: number; inFlight: number; spills: number; panic: boolean },
  ): BalancerStats {
    return {
      queued: live.queued,
      retrying: live.retrying,
      inFlight: live.inFlight,
      completed: this.completed,
      failed: this.failed,
      refused: this.refused,
      retries: this.retries,
      budgetExhausted: this.budgetExhausted,
      spills: live.spills,
      displaced: { ...this.displaced },
      panic: live.panic,
      shards: shards.map((s) => ({
        id: s.id,
        inFlight: s.inFlight,
        ewmaMs: s.rttMs,
        requests: s.requests,
        failures: s.failures,
        ejected: s.health.state === 'ejected',
        ejections: s.health.ejections,
        limit: s.limit,
        displaced: { ...s.displaced },
        bytes: { ...s.transit },
      })),
      bytes: { ...this.transit.total },
      tiers: this.tiers.map((t, i) => ({ ...t, transit: { ...this.transit.tiers[i]! } })),
      labels: Object.fromEntries(
        [...this.labels].map(([label, values]) => [
          label,
          Object.fromEntries([...values].map(([value, figures]) => [value, { ...figures }])),
        ]),
      ),
      transit: this.transit.snapshotLabels(),
    };
  }
}
