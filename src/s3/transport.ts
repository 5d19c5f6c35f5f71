/**
 * The S3 transport: the plug-in an `S3Balancer` is built with. Its targets are `{ client, bucket,
 * prefix }`; its calls are `putObject()` (the one put, `put.ts`) and `upload()` (one put, or a
 * multipart upload, `upload.ts`), its batch call writes each batch of `s3.ingest` as one object
 * through the same `uploadOnce`. Its release waits for unfinished multipart uploads and destroys
 * the clients it built. It reaches the balancer only through the host the balancer attaches.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { RunContext } from '../admission/run.js';
import { systemClock, wallClock } from '../base/runtime.js';
import type { ShardSpec, ShardState } from '../base/types.js';
import type { MembershipHooks } from '../core/membership.js';
import type { BalancerOptions } from '../core/options.js';
import {
  type BatchCall,
  callThrough,
  type Transport,
  type TransportCall,
  type TransportHost,
} from '../core/transport.js';
import { provesNotSent } from '../retry/options.js';
import { attemptBody, type PreparedBody, streamConsumed } from './body.js';
import { classifyS3Error, credentialSecrets, type S3CallInfo } from './classify.js';
import { ownedClientFor } from './client.js';
import { S3Error } from './errors.js';
import { type BatchObject, s3Plan } from './ingest.js';
import type { S3Upkeep } from './multipart.js';
import {
  type ResolvedS3Options,
  resolveS3Options,
  S3_DEFAULTS,
  S3_OPTION_KEYS,
  toShardSpec,
} from './options.js';
import { type Classify, putOnce } from './put.js';
import { type ObjectJob, putJob, type UploadJob, uploadJob } from './request-checks.js';
import type {
  S3BalancerOptions,
  S3PutRequest,
  S3PutResult,
  S3Target,
  S3TargetSpec,
  S3UploadRequest,
  S3UploadResult,
} from './types.js';
import { uploadOnce } from './upload.js';

/** What an S3 balancer's membership takes: an S3 target spec, or a core spec. */
export type S3Spec = S3TargetSpec | ShardSpec<S3Target>;

/**
 * Checks the transport's options, and returns the core's (for the `Balancer`) with the
 * transport built from the rest. `discard()` lets go of what it built if the balancer cannot be.
 */
export function s3Transport(options: S3BalancerOptions): {
  core: BalancerOptions<S3Target>;
  transport: S3Transport;
} {
  // Clients built from target options (destroyed at release), by options object.
  const owned = new Map<unknown, S3Client>();
  try {
    const { core, s3 } = resolveS3Options(options, ownedClientFor(owned));
    return { core, transport: new S3Transport(s3, core, owned) };
  } catch (error) {
    // Invalid options: the clients built from target options so far are not handed out.
    for (const client of owned.values()) client.destroy();
    throw error;
  }
}

export class S3Transport implements Transport<S3Target, S3Spec> {
  readonly knownOptions = S3_OPTION_KEYS;
  readonly hooks: MembershipHooks<S3Target, S3Spec>;
  readonly batch: BatchCall<S3Target>;
  readonly #s3: ResolvedS3Options;
  readonly #owned: Map<unknown, S3Client>;
  /** Multipart uploads from their start to their Complete or Abort: the release waits for them. */
  readonly #uploads = new Set<Promise<void>>();
  /** Retry-after settings and the uploads `close()` waits for, for every S3 call. */
  readonly #upkeep: S3Upkeep;
  readonly #put: TransportCall<S3Target, S3PutRequest, ObjectJob, S3PutResult>;
  readonly #upload: TransportCall<S3Target, S3UploadRequest, UploadJob, S3UploadResult>;
  #host: TransportHost<S3Target> | undefined;

  constructor(
    s3: ResolvedS3Options,
    core: BalancerOptions<S3Target>,
    owned: Map<unknown, S3Client>,
  ) {
    this.#s3 = s3;
    this.#owned = owned;
    const clientFor = ownedClientFor(owned);
    this.hooks = {
      prepare: (spec, field) => toShardSpec(field, spec, clientFor),
      // A target whose client, bucket and prefix are unchanged keeps its load figures.
      sameTarget: (a, b) => a.client === b.client && a.bucket === b.bucket && a.prefix === b.prefix,
    };
    const uploads = this.#uploads;
    this.#upkeep = {
      track: (done) => {
        uploads.add(done);
        void done.finally(() => uploads.delete(done));
      },
      // The balancer checks timeoutMs: an attempt's bound, and at most the S3 default.
      cleanupDeadlineMs: Math.min(core.timeoutMs ?? S3_DEFAULTS.timeoutMs, S3_DEFAULTS.timeoutMs),
      // The balancer's clock (its default too): the cleanup deadline runs on it.
      clock: core.clock ?? systemClock,
      defaultRetryAfterMs: s3.defaultRetryAfterMs,
      maxRetryAfterMs: s3.maxRetryAfterMs,
    };
    this.#put = {
      prepare: putJob,
      attempt: (shard, ctx, job) => this.#putAttempt(shard, ctx, job),
    };
    this.#upload = {
      prepare: (request) => uploadJob(request, s3),
      attempt: (shard, ctx, job) => this.#uploadAttempt(shard, ctx, job),
    };
    const write = (shard: ShardState<S3Target>, ctx: RunContext, object: BatchObject) =>
      this.#writeBatch(shard, ctx, object);
    this.batch = {
      name: 's3',
      plan: (runner, field, options, extra) => s3Plan(runner, write, field, options, extra),
    };
  }

  attach(host: TransportHost<S3Target>): void {
    this.#host = host;
  }

  /** `S3Balancer.putObject()`: one object, put on the target the balancer picks. */
  putObject(request: S3PutRequest): Promise<S3PutResult> {
    return callThrough(this.#attached(), this.#put, request);
  }

  /** `S3Balancer.upload()`: one object, in parts when it is larger than one. */
  upload(request: S3UploadRequest): Promise<S3UploadResult> {
    return callThrough(this.#attached(), this.#upload, request);
  }

  /** Waits for unfinished multipart uploads (aborted, without drain), then destroys its clients. */
  async release(): Promise<void> {
    await Promise.all(this.#uploads);
    this.discard();
  }

  /** Destroys the clients it built from target options (the balancer closed, or was not built). */
  discard(): void {
    for (const client of this.#owned.values()) client.destroy();
    this.#owned.clear();
  }

  #attached(): TransportHost<S3Target> {
    if (this.#host === undefined) throw new Error('the S3 transport has no balancer yet');
    return this.#host;
  }

  async #putAttempt(
    shard: ShardState<S3Target>,
    ctx: RunContext,
    job: ObjectJob,
  ): Promise<S3PutResult> {
    const { bucket, prefix } = shard.target;
    const key = prefix + job.key;
    const body = attemptBody(`${job.field}.body`, job.body);
    const object = {
      key,
      contentType: job.contentType,
      metadata: job.metadata,
    };
    const etag = await putOnce(
      shard.target,
      ctx,
      object,
      {
        body,
        contentLength: job.contentLength,
        // A stream this attempt's body function made is let go when the put fails.
        release:
          body instanceof Uint8Array || job.body.stream !== undefined
            ? undefined
            : () => body.destroy(),
      },
      this.#classify(shard, key, job.body),
    );
    return { shardId: shard.id, bucket, key, etag };
  }

  async #uploadAttempt(
    shard: ShardState<S3Target>,
    ctx: RunContext,
    job: UploadJob,
  ): Promise<S3UploadResult> {
    const { bucket, prefix } = shard.target;
    const key = prefix + job.key;
    const body = attemptBody(`${job.field}.body`, job.body);
    const uploaded = await uploadOnce(
      shard.target,
      ctx,
      { key, contentType: job.contentType, metadata: job.metadata },
      body,
      {
        partSizeBytes: job.partSizeBytes,
        partConcurrency: job.partConcurrency,
        partSizeField: `${job.field}.partSizeBytes`,
        cleanupDeadlineMs: job.cleanupDeadlineMs,
      },
      this.#classify(shard, key, job.body),
      this.#upkeep,
    );
    return { shardId: shard.id, bucket, key, ...uploaded };
  }

  /** One batch of `s3.ingest` as one object: put, or uploaded in parts above the part size. */
  async #writeBatch(
    shard: ShardState<S3Target>,
    ctx: RunContext,
    batch: BatchObject,
  ): Promise<void> {
    const key = shard.target.prefix + batch.name;
    await uploadOnce(
      shard.target,
      ctx,
      {
        key,
        contentType: batch.contentType,
        contentEncoding: batch.contentEncoding,
        metadata: batch.metadata,
        transit: { rawBytes: batch.rawBytes, encoding: batch.contentEncoding },
      },
      batch.body,
      {
        partSizeBytes: batch.partSizeBytes,
        partConcurrency: batch.partConcurrency,
        partSizeField: `${batch.field}.partSizeBytes`,
      },
      this.#classify(shard, key, undefined),
      this.#upkeep,
    );
  }

  /**
   * The classifier of one attempt's calls on `key`: S3's errors mapped for the balancer, the
   * client's credentials scrubbed from them, and — for a one-shot stream `body` that was already
   * (partly) sent — made final.
   */
  #classify(shard: ShardState<S3Target>, key: string, body: PreparedBody | undefined): Classify {
    return async (error, operation) => {
      const info: S3CallInfo = {
        operation,
        shardId: shard.id,
        bucket: shard.target.bucket,
        key,
        defaultRetryAfterMs: this.#s3.defaultRetryAfterMs,
        maxRetryAfterMs: this.#s3.maxRetryAfterMs,
        wallClock,
        secrets: await credentialSecrets(shard.target.client),
      };
      const mapped = classifyS3Error(error, info);
      if (body === undefined || !streamConsumed(body) || !provesNotSent(mapped)) return mapped;
      return notReplayable(mapped, info);
    };
  }
}

/**
 * A failure that proves nothing was sent, after a one-shot stream was read: retrying it elsewhere
 * would send what is left of the stream, so it is final.
 */
function notReplayable(mapped: unknown, info: S3CallInfo): S3Error {
  const { statusCode, s3Code } = mapped as { statusCode?: number; s3Code?: string };
  return new S3Error(
    {
      operation: info.operation,
      shardId: info.shardId,
      bucket: info.bucket,
      key: info.key,
      statusCode,
      s3Code,
      retryable: false,
      cause: mapped,
    },
    `S3 ${info.operation} of "${info.key}" to bucket "${info.bucket}" on shard "${info.shardId}" failed (${
      s3Code ?? (mapped instanceof Error ? mapped.name : 'error')
    }) after its one-shot stream body was read, so it is not retried: pass a function returning a fresh body to make the put replayable`,
  );
}
