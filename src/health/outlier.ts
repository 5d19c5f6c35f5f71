import type { Shard } from '../shard.js';
import type { Clock } from '../types.js';
import type { ResolvedHealthOptions } from './options.js';

/** What the detector tells its host (the balancer) about. */
export interface OutlierHost {
  readonly clock: Clock;
  /** The live membership. */
  members(): readonly Shard[];
  /** A shard's health changed: recompute who can be offered, emit events. */
  healthChanged(shard: Shard, change: 'eject' | 'probe' | 'restore', durationMs: number): void;
}

/**
 * Passive outlier ejection (Envoy's consecutive-5xx detector). `consecutiveFailures` failures in a
 * row eject a shard for `baseEjectionMs × level` (capped at `maxEjectionMs`), where the level is
 * how often it was ejected without a long healthy spell between. When the time is up the shard is
 * let back for one probe call: a success restores it, a failure ejects it again, longer. At most
 * `maxEjectedPercent` of shards (always at least one) are ejected at once.
 *
 * The detector only changes `Shard.health`; the balancer filters the candidates, so no picker
 * knows about health (grpc-js: health is a decorator around a picker).
 */
export class OutlierDetector {
  private readonly options: ResolvedHealthOptions;
  private readonly host: OutlierHost;

  constructor(options: ResolvedHealthOptions, host: OutlierHost) {
    this.options = options;
    this.host = host;
  }

  onSuccess(shard: Shard): void {
    shard.consecutiveFailures = 0;
    if (shard.health === 'probing') {
      shard.health = 'healthy';
      shard.restoredAtMs = this.host.clock.now();
      this.host.healthChanged(shard, 'restore', 0);
    }
  }

  onFailure(shard: Shard): void {
    shard.consecutiveFailures++;
    if (shard.removed || shard.health === 'ejected') return;
    if (
      shard.health === 'probing' ||
      shard.consecutiveFailures >= this.options.consecutiveFailures
    ) {
      this.tryEject(shard);
    }
  }

  /** Most shards that may be ejected at once: `maxEjectedPercent` of them, at least one. */
  maxEjected(): number {
    const n = this.host.members().length;
    return Math.max(1, Math.floor((n * this.options.maxEjectedPercent) / 100));
  }

  ejectedCount(): number {
    let count = 0;
    for (const shard of this.host.members()) if (shard.health === 'ejected') count++;
    return count;
  }

  /** True when too few shards are healthy to trust ejection (Envoy's panic threshold). */
  inPanic(): boolean {
    const members = this.host.members();
    if (members.length === 0) return false;
    const healthy = members.length - this.ejectedCount();
    return (healthy * 100) / members.length < this.options.panicThreshold;
  }

  private tryEject(shard: Shard): void {
    if (this.ejectedCount() >= this.maxEjected()) {
      // At the cap: a probing shard that failed stays on probation rather than at full traffic.
      return;
    }
    const now = this.host.clock.now();
    // A long healthy spell since the last restoration forgives earlier ejections; a failed probe
    // (or a shard never restored) keeps its level, so each ejection lasts longer.
    if (
      shard.health !== 'probing' &&
      Number.isFinite(shard.restoredAtMs) &&
      now - shard.restoredAtMs > this.options.maxEjectionMs
    ) {
      shard.ejectionLevel = 0;
    }
    shard.ejectionLevel++;
    shard.ejections++;
    shard.health = 'ejected';
    const durationMs = Math.min(
      this.options.baseEjectionMs * shard.ejectionLevel,
      this.options.maxEjectionMs,
    );
    shard.cancelEjectionTimer?.();
    shard.cancelEjectionTimer = this.host.clock.setTimer(
      () => {
        shard.cancelEjectionTimer = undefined;
        if (shard.removed || shard.health !== 'ejected') return;
        shard.health = 'probing';
        shard.consecutiveFailures = 0;
        this.host.healthChanged(shard, 'probe', 0);
      },
      durationMs,
      true,
    );
    this.host.healthChanged(shard, 'eject', durationMs);
  }

  /** Forgets a shard's timers (removed from membership). */
  forget(shard: Shard): void {
    shard.cancelEjectionTimer?.();
    shard.cancelEjectionTimer = undefined;
  }
}
