/**
 * The one door into `ingest/` for the balancer and the package index: record ingestion
 * (`ingest`, `createWriteStream`, batching), one concept per file behind it.
 */
export { IngestError, type IngestStop, WriteFailedError } from './errors.js';
export { ingest } from './ingest.js';
export { BATCH_DEFAULTS, checkKeyedPicker } from './options.js';
export type {
  BatchContext,
  BatchIngestOptions,
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
  RecordSource,
  RecordWriteStream,
  RunnerLike,
  SendFn,
  ShardProgress,
  ShardWait,
  SingleIngestOptions,
  SingleRecordOptions,
} from './types.js';
export { createWriteStream } from './write-stream.js';
