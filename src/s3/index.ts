/**
 * shardwise/s3 — the `@aws-sdk/client-s3` transport: spreads PutObject and multipart uploads
 * across buckets or endpoints given as `{ client, bucket }` targets, with S3 errors classified
 * for the balancer (`SlowDown` → push-back, 5xx and network errors retried, 4xx not) and
 * keep-alive clients from `createS3Client`. Imports the core; the core never imports it.
 */

// The core API too (Balancer, pickers, errors, types), so one import is enough for a transport
// user: re-exported, not redeclared, so a name means the same class or type from either entry.
// `isShardwiseError` is the core's function too, typed here to narrow this transport's code.
export * from '../index.js';
export {
  COMPRESSION_DEFAULTS,
  Compressed,
  type CompressionCodec,
  type CompressionOption,
  Compressor,
  createCompressor,
} from '../transport/compression.js';
export { createS3Balancer, S3Balancer } from './balancer.js';
export { classifyS3Error, type S3CallInfo } from './classify.js';
export { createS3Client, S3_CLIENT_DEFAULTS } from './client.js';
export {
  isS3Error,
  isShardwiseError,
  S3Error,
  type S3ErrorClasses,
  type S3ErrorDetails,
} from './errors.js';
export type {
  S3BalancerIngestOptions,
  S3BalancerRecordOptions,
  S3IngestOptions,
  S3ObjectInfo,
  S3RecordOptions,
} from './ingest.js';
export { S3_DEFAULTS, S3_LIMITS } from './options.js';
export type {
  CreateS3ClientOptions,
  S3BalancerOptions,
  S3BalancerStats,
  S3Body,
  S3BodyValue,
  S3PutRequest,
  S3PutResult,
  S3Target,
  S3TargetSpec,
  S3UploadRequest,
  S3UploadResult,
} from './types.js';
