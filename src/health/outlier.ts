import type { Clock } from '../base/types.js';
import type { ResolvedHealthOptions } from './options.js';
import { type HealthRecord, WINDOW_SLICES } from './record.js';

/** A shard as the detector sees it: its health record, and whether it left the membership. */
export interface HealthSubject {
  readonly health: HealthRecord;
  readonly removed: boolean;
}

/** What the detector tells its host (the balancer) about. */
export interface OutlierHost<S extends HealthSubject> {
  readonly clock: Clock;
  /** The live membership. */
  members(): readonly S[];
  /**
   * A shard's health changed: recompute who can be offered, emit events. `early`: an early probe
   * began (`probe`) or failed, leaving the shard ejected until its ejection's own end (`eject`) —
   * no new ejection, nothing to announce.
   */
  healthChanged(
    shard: S,
    change: 'eject' | 'probe' | 'restore',
    durationMs: number,
    early?: boolean,
  ): void;
}

/** The health changes the detector reports. */
export type HealthChange = 'eject' | 'probe' | 'restore';

/**
 * A change an attempt's outcome made, returned to the caller rather than called back mid-step
 * (`early`: an early probe failed, the same ejection goes on: nothing to announce).
 */
export interface HealthUpdate {
  change: 'eject' | 'restore';
  durationMs: number;
  early: boolean;
}

/**
 * Passive outlier ejection, with Envoy's two detectors: consecutive failures
 * (`consecutiveFailures` in a row) and failure percentage (`failurePercent` of at least
 * `failureMinRequests` attempts within `failureWindowMs`). An ejection lasts
 * `baseEjectionMs × level` (capped at `maxEjectionMs`), where the level is how often the shard was
 * ejected without a long healthy spell between. When the time is up the shard is let back for one
 * probe call: a success restores it, a failure ejects it again, longer. At most
 * `max(1, floor(n × maxEjectedPercent / 100))` shards are ejected at once.
 *
 * The detector only changes health records; the candidate set filters, so no picker knows about
 * health (grpc-js: outlier detection decorates a child picker).
 */
export class OutlierDetector<S extends HealthSubject> {
  constructor(
    private readonly options: ResolvedHealthOptions,
    private readonly host: OutlierHost<S>,
  ) {}

  /**
   * An attempt on `shard` succeeded at `nowMs` (the balancer clock's time); `probe`: it was the
   * probe of a probing shard. Only the probe decides: a call from before the ejection does not.
   * Returns the restoration it made, if it made one (the caller acts on it once its step is done).
   */
  onSuccess(
    shard: S,
    nowMs: number = this.host.clock.now(),
    probe = true,
  ): HealthUpdate | undefined {
    const health = shard.health;
    health.consecutiveFailures = 0;
    this.count(health, false, nowMs);
    // A shard removed while its probe ran is gone: its `restore` would name the next with its id.
    if (health.state === 'probing' && probe && !shard.removed) {
      health.state = 'healthy';
      health.restoredAtMs = nowMs;
      health.early = false;
      // An early probe succeeded before the ejection's end: its timer has nothing left to do.
      health.cancelTimer?.();
      health.cancelTimer = undefined;
      return { change: 'restore', durationMs: 0, early: false };
    }
    return undefined;
  }

  /**
   * Lets one probe through to ejected `shard` before its ejection ends, because keyed work waits
   * for it (`admission/home-lines.ts`). A success restores it as any probe does; a failure before
   * the ejection's end puts it back, ejected until then, without a new ejection.
   */
  probeEarly(shard: S): void {
    const health = shard.health;
    if (shard.removed || health.state !== 'ejected') return;
    health.state = 'probing';
    health.early = true;
    health.consecutiveFailures = 0;
    this.host.healthChanged(shard, 'probe', 0, true);
  }

  /**
   * An attempt on `shard` failed by the shard's fault at `nowMs` (`probe`: see `onSuccess`).
   * Returns the ejection it made, if it made one (the caller acts on it once its step is done).
   */
  onFailure(
    shard: S,
    nowMs: number = this.host.clock.now(),
    probe = true,
  ): HealthUpdate | undefined {
    const health = shard.health;
    health.consecutiveFailures++;
    const rateTripped = this.count(health, true, nowMs);
    if (shard.removed || health.state === 'ejected') return undefined;
    if (health.state === 'probing' && !probe) return undefined;
    if (health.state === 'probing' && health.early && nowMs < health.ejectedUntilMs) {
      // An early probe failed while the ejection still runs: ejected again until its own end.
      health.state = 'ejected';
      health.early = false;
      return { change: 'eject', durationMs: health.ejectedUntilMs - nowMs, early: true };
    }
    if (
      health.state === 'probing' ||
      health.consecutiveFailures >= this.options.consecutiveFailures ||
      rateTripped
    ) {
      return this.tryEject(shard);
    }
    return undefined;
  }

  /** Most shards that may be ejected at once: `maxEjectedPercent` of them, at least one. */
  maxEjected(): number {
    const n = this.host.members().length;
    return Math.max(1, Math.floor((n * this.options.maxEjectedPercent) / 100));
  }

  ejectedCount(): number {
    let count = 0;
    for (const shard of this.host.members()) if (shard.health.state === 'ejected') count++;
    return count;
  }

  /** True when too few shards are healthy to trust ejection (Envoy's panic threshold). */
  inPanic(): boolean {
    const members = this.host.members();
    if (members.length === 0) return false;
    const healthy = members.length - this.ejectedCount();
    return (healthy * 100) / members.length < this.options.panicThreshold;
  }

  /** Forgets a shard's timers (removed from membership). */
  forget(shard: S): void {
    shard.health.cancelTimer?.();
    shard.health.cancelTimer = undefined;
  }

  /**
   * Counts an attempt in the shard's failure-rate window — the last `failureWindowMs`, in ten
   * slices: it slides by a tenth, the oldest slice leaving whole (a fixed window would split 20
   * failures in 2 s into two halves that never trip) — true when the failure percentage trips.
   */
  private count(health: HealthRecord, failed: boolean, now: number): boolean {
    const o = this.options;
    if (o.failurePercent === Number.POSITIVE_INFINITY) return false;
    const slice = Math.floor(now / (o.failureWindowMs / WINDOW_SLICES));
    if (slice !== health.slice) slide(health, slice);
    const at = (((slice % WINDOW_SLICES) + WINDOW_SLICES) % WINDOW_SLICES) * 2;
    health.slices[at]!++;
    health.windowRequests++;
    if (failed) {
      health.slices[at + 1]!++;
      health.windowFailures++;
    }
    return (
      failed &&
      health.windowRequests >= o.failureMinRequests &&
      health.windowFailures * 100 >= o.failurePercent * health.windowRequests
    );
  }

  private tryEject(shard: S): HealthUpdate | undefined {
    // At the cap: a probing shard that failed stays on probation rather than at full traffic.
    if (this.ejectedCount() >= this.maxEjected()) return undefined;
    const health = shard.health;
    const now = this.host.clock.now();
    // A long healthy spell since the last restoration forgives earlier ejections; a failed probe
    // (or a shard never restored) keeps its level, so each ejection lasts longer.
    if (
      health.state !== 'probing' &&
      Number.isFinite(health.restoredAtMs) &&
      now - health.restoredAtMs >= this.options.maxEjectionMs
    ) {
      health.level = 0;
    }
    health.level++;
    health.ejections++;
    health.state = 'ejected';
    health.early = false;
    // The window restarts after an ejection: the failures that caused it are paid for.
    health.clearWindow();
    const durationMs = Math.min(
      this.options.baseEjectionMs * health.level,
      this.options.maxEjectionMs,
    );
    health.ejectedUntilMs = now + durationMs;
    health.cancelTimer?.();
    health.cancelTimer = this.host.clock.setTimer(
      () => {
        health.cancelTimer = undefined;
        if (shard.removed || health.state !== 'ejected') return;
        health.state = 'probing';
        health.consecutiveFailures = 0;
        this.host.healthChanged(shard, 'probe', 0);
      },
      durationMs,
      true,
    );
    return { change: 'eject', durationMs, early: false };
  }
}

/** Moves the window to `slice`: the slices it leaves behind are emptied (all, after a long gap or a clock stepping back). */
function slide(health: HealthRecord, slice: number): void {
  const from = health.slice;
  if (slice < from || slice - from >= WINDOW_SLICES) health.clearWindow();
  else {
    const slices = health.slices;
    for (let s = from + 1; s <= slice; s++) {
      const at = (((s % WINDOW_SLICES) + WINDOW_SLICES) % WINDOW_SLICES) * 2;
      health.windowRequests -= slices[at]!;
      health.windowFailures -= slices[at + 1]!;
      slices[at] = 0;
      slices[at + 1] = 0;
    }
  }
  health.slice = slice;
}
