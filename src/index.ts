/**
 * shardwise — client-side load balancing for data ingestion.
 * The core: no transport is imported here (see `shardwise/http`, `shardwise/s3`).
 */

export {
  type AttemptRecord,
  BalancerClosedError,
  ConfigError,
  type CoreErrorClasses,
  type ErrorOfCode,
  MissingKeyError,
  NoShardAvailableError,
  PickerError,
  PushBackError,
  QueueFullError,
  RecordTooLargeError,
  RetriesExhaustedError,
  ShardRemovedError,
  ShardUnavailableError,
  type ShardwiseErrorCode,
  type ShardwiseErrorGuard,
  type ShardwiseErrorLike,
  TimeoutError,
  type UnavailableReason,
  UncertainWriteError,
} from './base/errors.js';
export type * from './base/events.js';
export { systemClock } from './base/runtime.js';
export type * from './base/types.js';
export { MAX_DURATION_MS } from './base/validate.js';
export {
  Balancer,
  type BalancerExtension,
  type BalancerStats,
  type DisplacedCounts,
  QUEUE_CEILING_FACTOR,
  type RunContext,
  type RunFn,
  type RunOptions,
  type ShardStats,
  type WrapOptions,
} from './core/balancer.js';
export { isShardwiseError, type ShardwiseErrorClasses } from './core/error-guard.js';
export type { MembershipHooks } from './core/membership.js';
export { type BalancerOptions, MAX_WEIGHT } from './core/options.js';
export { DeadLetterError } from './dead-letters/error.js';
export type { DeadLetterOption } from './dead-letters/types.js';
export * from './hash/index.js';
export type { HealthOptions } from './health/options.js';
export {
  BATCH_DEFAULTS,
  type BatchContext,
  type BatchOptions,
  type BatchRecordOptions,
  type BatchResult,
  type BatchSendFn,
  type BatchSendResult,
  type CommonRecordOptions,
  IngestError,
  type IngestExtras,
  type IngestFailure,
  type IngestOptions,
  type IngestProgress,
  type IngestStop,
  type IngestSummary,
  type RecordFailure,
  type RecordOptions,
  type RecordRetryOptions,
  type RecordWriteStream,
  type SendFn,
  type ShardProgress,
  type ShardWait,
  type SingleRecordOptions,
  WriteFailedError,
} from './ingest/index.js';
export type {
  BatchIngestOptions,
  RecordSource,
  SingleIngestOptions,
} from './ingest/types.js';
export * from './limits/index.js';
export { PeakEwma } from './load/ewma.js';
export * from './pickers/hashing/index.js';
export * from './pickers/index.js';
export type { RetryBudgetOptions } from './retry/budget.js';
export { defaultRetryable, provesNotSent, type RetryOptions } from './retry/options.js';
export type { Requirement } from './routing/requirement.js';
export type { Checkpoint } from './sources/checkpoint.js';
export { CheckpointError, SourceError } from './sources/errors.js';
export type { SourcePosition } from './sources/position.js';
