/**
 * Record ingestion (`ingest`, `createWriteStream`), kept under this name for the modules that
 * import it: the implementation lives in `ingest/`, one concept per file.
 */
export { IngestError, type IngestStop, WriteFailedError } from './ingest/errors.js';
export { ingest } from './ingest/ingest.js';
export { BATCH_DEFAULTS } from './ingest/options.js';
export type {
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
  SingleRecordOptions,
} from './ingest/types.js';
export { createWriteStream } from './ingest/write-stream.js';
