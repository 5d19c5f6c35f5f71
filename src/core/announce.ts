/**
 * The events of an attempt's start, built only when someone listens (STYLE rule 8). Payloads
 * carry shard ids and plain figures, never a target (a client, an origin with credentials).
 */
import type { EventEmitter } from 'eventemitter3';
import type { Run } from '../admission/run.js';
import type { BalancerEvents } from '../base/events.js';
import type { Shard } from '../load/shard.js';

/** Emits `pick` and `route` for the attempt `run` starts on `shard`. */
export function announceAttempt<T>(
  events: EventEmitter<BalancerEvents>,
  run: Run<T>,
  shard: Shard<T>,
): void {
  if (events.listenerCount('pick') > 0) {
    events.emit('pick', {
      shardId: shard.id,
      shard: shard.view(),
      attempt: run.attempt,
      key: run.key,
    });
  }
  if (events.listenerCount('route') > 0) {
    events.emit('route', {
      shardId: shard.id,
      attempt: run.attempt,
      requirement: run.requirement?.source,
      tier: run.tier < 0 ? undefined : run.tier,
      reason: run.reason,
      home: run.keyed?.home?.id,
    });
  }
}
