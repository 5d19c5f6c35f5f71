import type { Key, ShardState } from './types.js';

/** A shard was chosen for an attempt. */
export interface PickEvent {
  shard: ShardState;
  attempt: number;
  key: Key | undefined;
}

/** An attempt succeeded. */
export interface SuccessEvent {
  shardId: string;
  attempt: number;
  latencyMs: number;
}

/** An attempt failed (the run may still be retried: see `willRetry`). */
export interface FailureEvent {
  shardId: string;
  attempt: number;
  latencyMs: number;
  error: unknown;
  willRetry: boolean;
}

/** A failed run will try again after `delayMs`, on another shard where one exists. */
export interface RetryEvent {
  /** The shard whose attempt failed. */
  shardId: string;
  /** The number of the attempt about to start. */
  attempt: number;
  delayMs: number;
  error: unknown;
}

/** A shard was ejected by outlier detection for `durationMs`. */
export interface EjectEvent {
  shardId: string;
  durationMs: number;
  ejections: number;
}

/** An ejected shard is back: `probe` (one call let through) or `healthy` (the probe succeeded). */
export interface RestoreEvent {
  shardId: string;
  phase: 'probe' | 'healthy';
}

/** Panic mode started (`active`) or ended. */
export interface PanicEvent {
  active: boolean;
  healthy: number;
  total: number;
}

/** The admission queue reached `maxQueued`: `ready()` now waits. */
export interface SaturatedEvent {
  queued: number;
  maxQueued: number;
}

/** Why an attempt went where it went (an audit trail for routing rules). */
export interface RouteEvent {
  shardId: string;
  attempt: number;
  /** The run's hard rule, if any. */
  requirement: Readonly<Record<string, string | readonly string[]>> | undefined;
  /** Index of the `prefer` tier used, or undefined without tiers. */
  tier: number | undefined;
  reason: 'direct' | 'preferred' | 'spill:saturated' | 'spill:unhealthy';
}

/** A shard's adaptive concurrency limit moved. */
export interface LimitEvent {
  shardId: string;
  limit: number;
  previous: number;
}

/** Membership change. */
export interface ShardEvent {
  shardId: string;
}

/**
 * The Balancer's events (eventemitter3, typed). Payloads are built only when someone listens.
 *
 * @example
 * balancer.on('eject', ({ shardId, durationMs }) => log.warn({ shardId, durationMs }, 'ejected'));
 */
export interface BalancerEvents {
  pick: [PickEvent];
  route: [RouteEvent];
  success: [SuccessEvent];
  failure: [FailureEvent];
  retry: [RetryEvent];
  eject: [EjectEvent];
  restore: [RestoreEvent];
  panic: [PanicEvent];
  saturated: [SaturatedEvent];
  /** The queue fell below `maxQueued` again: `ready()` resolved. */
  ready: [];
  /** Every admitted run has settled. */
  drained: [];
  limit: [LimitEvent];
  shardAdded: [ShardEvent];
  shardRemoved: [ShardEvent & { drained: boolean }];
}
