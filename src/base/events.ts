import type { Key, Requirement } from './types.js';

/**
 * A shard as events show it: its identity and figures at the moment of the event — never its
 * `target` (a client, a URL with credentials): payloads carry ids and plain figures only.
 */
export interface ShardView {
  readonly id: string;
  readonly index: number;
  readonly weight: number;
  readonly zone: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly inFlight: number;
  readonly bytesInFlight: number;
  readonly limit: number;
}

/** A shard was chosen for an attempt. */
export interface PickEvent {
  shardId: string;
  /** The chosen shard's identity and figures (no target). */
  shard: ShardView;
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

/**
 * Why an attempt went where it went: `direct` (no tiers; a keyed run on its home), `preferred`
 * (its first tier), `spill:*` (a later tier: the earlier ones saturated, ejected, or — for a
 * retry — holding only shards it tried), or `displaced:*` — a keyed attempt that did not run
 * on its key's home shard (`affinity: 'spill'`), because the home was at its cap, ejected, already
 * tried by this run, or at the bounded-load limit.
 */
export type RouteReason =
  | 'direct'
  | 'preferred'
  | 'spill:saturated'
  | 'spill:unhealthy'
  | 'spill:retry'
  | 'displaced:capped'
  | 'displaced:ejected'
  | 'displaced:retry'
  | 'displaced:bounded';

/** Why an attempt went where it went (an audit trail for routing rules and keyed placement). */
export interface RouteEvent {
  shardId: string;
  attempt: number;
  /** The run's hard rule, if any. */
  requirement: Readonly<Requirement> | undefined;
  /** Index of the `prefer` tier used, or undefined without tiers. */
  tier: number | undefined;
  reason: RouteReason;
  /** Keyed runs: the id of the key's home shard. */
  home?: string;
}

/**
 * An attempt's transport reported bytes (`ctx.reportSent`, `ctx.reportReceived`): a request body
 * sent, or a response body received. Ids and figures only.
 */
export interface TransitEvent {
  shardId: string;
  attempt: number;
  /** Index of the `prefer` tier the attempt ran in, or undefined without tiers. */
  tier: number | undefined;
  direction: 'sent' | 'received';
  /** Bytes on the wire: the body as sent (compressed), or as received. */
  bytes: number;
  /** Sent: the body's bytes before compression. Received: the same as `bytes`. */
  rawBytes: number;
  /** The bytes' content-encoding (`gzip`, `zstd`, `br`), `identity` when none. */
  encoding: string;
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
  /** An attempt reported bytes sent or received (see `TransitEvent`). */
  transit: [TransitEvent];
  rehash: [RehashEvent];
  shardAdded: [ShardEvent];
  shardRemoved: [ShardEvent & { drained: boolean }];
}

/** What `resize()` did, as given to `onRehash` listeners. */
export interface RehashEvent {
  /** The picker's name, e.g. `consistent-hash:maglev`. */
  picker: string;
  /** The new table size. */
  tableSize: number;
  /** The size before (0 when no table had been built). */
  previousTableSize: number;
  /** The exact fraction of the 32-bit key-hash space whose shard changed, in [0, 1]. */
  moved: number;
}
