import type { Readable } from 'node:stream';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { Key } from '../base/types.js';
import type { BalancerStats } from '../core/balancer.js';
import type { BalancerOptions } from '../core/options.js';
import type { Requirement } from '../routing/requirement.js';

/**
 * What an S3 shard is: a client (an endpoint, a region, credentials) and a bucket, with an
 * optional key prefix. Frozen; `shard.target` in pickers and events.
 */
export interface S3Target {
  readonly client: S3Client;
  readonly bucket: string;
  /** Prepended to every key put on this target (default `''`). */
  readonly prefix: string;
}

/** Options of {@link createS3Client}: every `S3ClientConfig` field plus the keep-alive pool's. */
export interface CreateS3ClientOptions extends S3ClientConfig {
  /** Sockets the client may open per host (default 50); idle ones are kept alive and reused. */
  maxSockets?: number;
  /** Time to establish a connection, ms (default 5 000; 0 = none). */
  connectionTimeoutMs?: number;
  /** Longest silence on a socket during a request, ms (default 0 = none). */
  socketTimeoutMs?: number;
}

/** One S3 target in `createS3Balancer({ targets })`, `addShard` and `setShards`. */
export interface S3TargetSpec {
  /** The shard id (default: the bucket, or `bucket/prefix` when a prefix is given). Unique. */
  id?: string;
  /**
   * An `S3Client` (yours: the balancer never destroys it), or the options of
   * {@link createS3Client} (the balancer builds a keep-alive client from them, shared by every
   * target given the same options object, and destroys it on `close()`).
   */
  client: S3Client | CreateS3ClientOptions;
  /** Bucket name, at least 3 characters. */
  bucket: string;
  /** Key prefix on this target (default `''`): `putObject({ key })` writes `prefix + key`. */
  prefix?: string;
  weight?: number;
  zone?: string;
  labels?: Record<string, string>;
}

/**
 * Options of {@link createS3Balancer}: every `Balancer` option (except `shards`, given as
 * `targets`) plus the transport's.
 */
export interface S3BalancerOptions extends Omit<BalancerOptions<S3Target>, 'shards'> {
  /** The buckets (or endpoints) to spread objects over; at least one, ids unique. */
  targets: S3TargetSpec[];
  /** Default part size of `upload()`, bytes (default 8 MiB; at least 5 MiB, the S3 minimum). */
  partSizeBytes?: number;
  /** Parts of one `upload()` sent at once (default 4). */
  partConcurrency?: number;
  /** How long a `SlowDown` without a usable `Retry-After` holds its target, ms (default 1 000). */
  defaultRetryAfterMs?: number;
  /** Cap on a `Retry-After` wait, ms (default 60 000). */
  maxRetryAfterMs?: number;
}

/**
 * An object body: bytes, text, a stream, an async iterable of chunks — or a function returning
 * a fresh body per attempt. A stream or iterable can be sent once: a put with one is not retried
 * after it may have started. Give a function to make a streamed put replayable.
 */
export type S3BodyValue = string | Uint8Array | Readable | AsyncIterable<Uint8Array | string>;
export type S3Body = S3BodyValue | (() => S3BodyValue);

/** One object to put through the balancer. */
export interface S3PutRequest {
  /** The object key (the target's prefix is prepended). */
  key: string;
  body: S3Body;
  contentType?: string;
  /** User metadata (`x-amz-meta-*`). */
  metadata?: Record<string, string>;
  /** What hashing pickers route by (default: `key`). */
  routingKey?: Key;
  /** Body length, bytes. Sent as Content-Length; needed by real S3 for a stream body. */
  contentLength?: number;
  /** Bytes declared to the balancer for byte-aware load (default: the body's length when known). */
  bytes?: number;
  /** Aborts the put, retries included. */
  signal?: AbortSignal;
  /** Bound on one attempt, ms (default: the balancer's `timeoutMs`). */
  timeoutMs?: number;
  /** A hard routing rule on target labels (see `RunOptions.require`). */
  require?: Requirement;
  /** What the balancer's `policy` derives the routing rule from. */
  meta?: unknown;
}

/** One large object to upload in parts (a multipart upload on one target). */
export interface S3UploadRequest extends Omit<S3PutRequest, 'contentLength'> {
  /** Part size, bytes (default: the balancer's `partSizeBytes`, 8 MiB; at least 5 MiB). */
  partSizeBytes?: number;
  /** Parts sent at once (default: the balancer's `partConcurrency`, 4). */
  partConcurrency?: number;
}

/** Where an object landed. */
export interface S3PutResult {
  shardId: string;
  bucket: string;
  /** The full key written (prefix included). */
  key: string;
  /** The object's ETag, without the surrounding quotes. */
  etag: string;
}

/** Where an uploaded object landed, and in how many parts. */
export interface S3UploadResult extends S3PutResult {
  /** Parts uploaded (1 when the body fit in one part and a single PutObject was used). */
  parts: number;
  /** True when a multipart upload was used. */
  multipart: boolean;
}

export type S3BalancerStats = BalancerStats;
