/**
 * The one door into `ingest/` for the balancer and the package index: record ingestion
 * (`ingest`, `createWriteStream`, batching), one concept per file behind it.
 */
export { IngestError, type IngestStop, WriteFailedError } from './errors.js';
export { ingest } from './ingest.js';
export { BATCH_DEFAULTS } from './options.js';
export type {
  BatchContext,
  BatchOptions,
  BatchRecordOptions,
  BatchResult,
  BatchSendFn,
  BatchSendResult,
  CommonRecordOptions,
  IngestExtras,
  IngestFailure,
  IngestOptions,
  IngestProgress,
  IngestSummary,
  RecordFailure,
  RecordOptions,
  RecordRetryOptions,
  RecordWriteStream,
  RunnerLike,
  SendFn,
  ShardProgress,
  ShardWait,
  SingleRecordOptions,
} from './types.js';
export { createWriteStream } from './write-stream.js';
