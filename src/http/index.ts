/**
 * shardwise/http — the undici transport: one keep-alive `Pool` per shard, status and connection
 * errors classified for the balancer's retries, server-reported load fed to the shard.
 * Imports the core; the core never imports it.
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
export { parseRetryAfter } from '../transport/retry-after.js';
export { createHttpBalancer, HttpBalancer } from './balancer.js';
export type { WarmResult } from './connector.js';
export { BodyTooLargeError, HttpError, type HttpErrorClasses, isShardwiseError } from './errors.js';
export type {
  HttpBalancerIngestOptions,
  HttpBalancerRecordOptions,
  HttpEncode,
  HttpIngestOptions,
  HttpRecordOptions,
} from './ingest.js';
export { HTTP_DEFAULTS } from './options.js';
export { feedReportedLoad, parseLoadHeader } from './reported-load.js';
export type {
  HeadersFn,
  HttpBalancerOptions,
  HttpBalancerStats,
  HttpBody,
  HttpBodyValue,
  HttpHeaders,
  HttpRequest,
  HttpResponse,
  HttpShardSpec,
  HttpShardStats,
  HttpTarget,
  HttpTlsOptions,
  SignHook,
  SignRequest,
} from './types.js';
