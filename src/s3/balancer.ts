import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { ConfigError } from '../base/errors.js';
import { wallClock } from '../base/runtime.js';
import type { ShardSpec, ShardState } from '../base/types.js';
import { checkKnownKeys, checkObject, nonNegativeInt, positiveInt } from '../base/validate.js';
import { Balancer, type RunContext, type RunOptions } from '../core/balancer.js';
import { buildsItsOwnCalls } from '../ingest/transport-plan.js';
import type {
  IngestOptions,
  IngestSummary,
  RecordOptions,
  RecordSource,
  RecordWriteStream,
} from '../ingest/types.js';
import { provesNotSent } from '../retry/options.js';
import {
  type AttemptBody,
  attemptBody,
  BodyFailed,
  bodyFailure,
  nextUnless,
  type Part,
  type PreparedBody,
  partsOf,
  prepareBody,
  streamConsumed,
  unlessBodyFails,
} from './body.js';
import { withCallSignal } from './call-signal.js';
import { classifyS3Error, credentialSecrets, type S3CallInfo } from './classify.js';
import { createS3Client, ownedClientFor } from './client.js';
import { S3Error } from './errors.js';
import {
  type S3BalancerIngestOptions,
  type S3BalancerRecordOptions,
  type S3IngestOptions,
  type S3RecordOptions,
  s3Ingest,
  s3WriteStream,
} from './ingest.js';
import { multipartUpload, type S3Upkeep } from './multipart.js';
import {
  checkHeaderText,
  checkKeyPath,
  checkMetadata,
  checkPartSize,
  type ResolvedS3Options,
  resolveS3Options,
  S3_DEFAULTS,
  S3_LIMITS,
  S3_OPTION_KEYS,
  toShardSpec,
} from './options.js';
import type {
  S3BalancerOptions,
  S3PutRequest,
  S3PutResult,
  S3Target,
  S3TargetSpec,
  S3UploadRequest,
  S3UploadResult,
} from './types.js';

const PUT_KEYS = [
  'key',
  'body',
  'contentType',
  'metadata',
  'routingKey',
  'contentLength',
  'bytes',
  'signal',
  'timeoutMs',
  'require',
  'meta',
];
const UPLOAD_KEYS = [
  ...PUT_KEYS.filter((k) => k !== 'contentLength'),
  'partSizeBytes',
  'partConcurrency',
];

/** One object across its attempts. */
interface ObjectJob {
  field: string;
  key: string;
  body: PreparedBody;
  contentType: string | undefined;
  metadata: Record<string, string> | undefined;
  contentLength: number | undefined;
  /** The request's own deadline for an upload's Create and Abort (its `timeoutMs`, ≤ 60 s). */
  cleanupDeadlineMs: number | undefined;
}

interface UploadJob extends ObjectJob {
  partSizeBytes: number;
  partConcurrency: number;
}

/**
 * A `Balancer` over S3 buckets (or S3 endpoints): each target is `{ client, bucket, prefix }`.
 * Everything a `Balancer` does (run, wrap, ingest, events, stats, membership) plus `putObject()`
 * and `upload()` (multipart, for large bodies). Build clients with {@link createS3Client} for
 * keep-alive connection reuse.
 *
 * @example
 * const client = createS3Client({ region: 'eu-west-1' });
 * const s3 = createS3Balancer({ targets: ['ingest-a', 'ingest-b', 'ingest-c'].map((bucket) => ({ client, bucket })) });
 * const { shardId, etag } = await s3.putObject({ key: 'rows/0001.jsonl', body: rows });
 * await s3.close();
 */
export class S3Balancer extends Balancer<S3Target, S3TargetSpec | ShardSpec<S3Target>> {
  readonly #s3: ResolvedS3Options;
  /** Retry-after settings and the multipart uploads `close()` waits for, for every S3 call. */
  readonly #upkeep: S3Upkeep;

  constructor(options: S3BalancerOptions) {
    // Clients this balancer builds from target options (destroyed on close), by options object.
    const owned = new Map<unknown, S3Client>();
    const cleanups = new Set<Promise<void>>();
    const clientFor = ownedClientFor(owned);
    let s3: ResolvedS3Options;
    let attemptMs: number;
    try {
      const resolved = resolveS3Options(options, clientFor);
      s3 = resolved.s3;
      attemptMs = resolved.core.timeoutMs ?? S3_DEFAULTS.timeoutMs;
      super(resolved.core, {
        knownOptions: S3_OPTION_KEYS,
        hooks: {
          prepare: (spec, field) => toShardSpec(field, spec, clientFor),
          // A target whose client, bucket and prefix are unchanged keeps its load figures.
          sameTarget: (a, b) =>
            a.client === b.client && a.bucket === b.bucket && a.prefix === b.prefix,
          closed: async () => {
            await Promise.all(cleanups);
            for (const client of owned.values()) client.destroy();
            owned.clear();
          },
        },
      });
    } catch (error) {
      // Invalid options: the clients built from target options so far are not handed out.
      for (const client of owned.values()) client.destroy();
      throw error;
    }
    this.#s3 = s3;
    this.#upkeep = {
      track: (done) => {
        cleanups.add(done);
        void done.finally(() => cleanups.delete(done));
      },
      // The balancer checked timeoutMs: an attempt's bound, and at most the S3 default.
      cleanupDeadlineMs: Math.min(attemptMs, S3_DEFAULTS.timeoutMs),
      clock: this.clock,
      defaultRetryAfterMs: s3.defaultRetryAfterMs,
      maxRetryAfterMs: s3.maxRetryAfterMs,
    };
  }

  /**
   * Puts one object on a target the picker chooses (hashing pickers route by `routingKey ??
   * key`), at `prefix + key`. Retried on another target on a 5xx, a network error or a
   * `SlowDown` — unless the body is a one-shot stream that an attempt has started to send.
   * Rejects with `S3Error` (4xx at once; 5xx after retries, inside `RetriesExhaustedError`),
   * `PushBackError`, or the core's errors.
   *
   * @example
   * const { bucket, key, etag } = await s3.putObject({ key: `events/${id}.json`, body: JSON.stringify(event), contentType: 'application/json' });
   */
  putObject(request: S3PutRequest): Promise<S3PutResult> {
    let job: ObjectJob;
    let runOptions: RunOptions;
    try {
      checkObject('request', request);
      checkKnownKeys('request', request, PUT_KEYS);
      job = objectJob('request', request);
      if (request.contentLength !== undefined) {
        job.contentLength = nonNegativeInt('request.contentLength', request.contentLength);
      }
      runOptions = this.#runOptions(request, job);
    } catch (error) {
      return this.refuse(error);
    }
    return this.run((shard, ctx) => this.#put(shard, ctx, job), runOptions);
  }

  /**
   * Uploads one large object to a target the picker chooses, as a multipart upload: parts of
   * `partSizeBytes` (default 8 MiB, at least 5 MiB), `partConcurrency` at a time, then
   * CompleteMultipartUpload; a failed upload is aborted (AbortMultipartUpload) and retried whole
   * on another target when its body can be replayed. A body that fits in one part is sent with a
   * single PutObject. The body's length (when known, or `bytes`) is declared to the balancer, so
   * byte-aware load sees a big upload as big.
   *
   * @example
   * const res = await s3.upload({ key: 'dumps/2024-06-01.parquet', body: () => createReadStream(path), bytes: size });
   * console.log(res.parts, res.etag);
   */
  upload(request: S3UploadRequest): Promise<S3UploadResult> {
    let job: UploadJob;
    let runOptions: RunOptions;
    try {
      checkObject('request', request);
      checkKnownKeys('request', request, UPLOAD_KEYS);
      const base = objectJob('request', request);
      const partSizeBytes =
        request.partSizeBytes === undefined
          ? this.#s3.partSizeBytes
          : checkPartSize('request.partSizeBytes', request.partSizeBytes);
      const partConcurrency =
        request.partConcurrency === undefined
          ? this.#s3.partConcurrency
          : positiveInt('request.partConcurrency', request.partConcurrency);
      const known = base.body.bytes;
      if (known !== undefined && Math.ceil(known / partSizeBytes) > S3_LIMITS.maxParts) {
        throw new ConfigError(
          'request.partSizeBytes',
          `is too small for a body of ${known} bytes: S3 allows at most ${S3_LIMITS.maxParts} parts`,
          partSizeBytes,
        );
      }
      job = { ...base, partSizeBytes, partConcurrency };
      runOptions = this.#runOptions(request, job);
    } catch (error) {
      return this.refuse(error);
    }
    return this.run((shard, ctx) => this.#upload(shard, ctx, job), runOptions);
  }

  /**
   * Writes every record of `source` as objects, one per batch (`{ objectKey, encode, batch }`:
   * NDJSON by default, multipart above `partSizeBytes`), or — given a `send` — as the core
   * `ingest` does. See `S3IngestOptions`.
   *
   * @example
   * await s3.ingest(rows, { objectKey: ({ shardId, seq }) => `train/2024-06-01/${shardId}-${seq}.jsonl` });
   */
  override ingest<Rec>(
    source: RecordSource<Rec>,
    options: S3BalancerIngestOptions<Rec>,
  ): Promise<IngestSummary<Rec>> {
    return buildsItsOwnCalls(options)
      ? s3Ingest(this, this.#upkeep, source, options as S3IngestOptions<Rec>)
      : super.ingest(source, options as IngestOptions<S3Target, Rec>);
  }

  /**
   * A write stream of records written as objects, one per batch (`{ objectKey, encode, batch }`),
   * or — given a `send` — the core write stream.
   *
   * @example
   * await pipeline(Readable.from(rows), s3.createWriteStream({ objectKey: ({ shardId, seq }) => `rows/${shardId}-${seq}.jsonl` }));
   */
  override createWriteStream<Rec>(options: S3BalancerRecordOptions<Rec>): RecordWriteStream<Rec> {
    return buildsItsOwnCalls(options)
      ? s3WriteStream(this, this.#upkeep, options as S3RecordOptions<Rec>)
      : (super.createWriteStream(
          options as RecordOptions<S3Target, Rec>,
        ) as RecordWriteStream<Rec>);
  }

  // ——— internals ———

  #runOptions(request: S3PutRequest | S3UploadRequest, job: ObjectJob): RunOptions {
    const known = job.body.bytes ?? job.contentLength;
    return {
      key: request.routingKey ?? request.key,
      signal: request.signal,
      timeoutMs: request.timeoutMs,
      // A PUT of the same key is idempotent; a one-shot stream cannot be sent twice (it is
      // retried only while untouched, when the error proves nothing was sent).
      idempotent: job.body.stream === undefined,
      bytes: request.bytes ?? known,
      require: request.require,
      meta: request.meta,
    };
  }

  /** What the classifier needs to know of a failed call, its client's credentials included. */
  async #info(shard: ShardState<S3Target>, operation: string, key: string): Promise<S3CallInfo> {
    return {
      operation,
      shardId: shard.id,
      bucket: shard.target.bucket,
      key,
      defaultRetryAfterMs: this.#s3.defaultRetryAfterMs,
      maxRetryAfterMs: this.#s3.maxRetryAfterMs,
      wallClock,
      secrets: await credentialSecrets(shard.target.client),
    };
  }

  /** The classified error, made final when a one-shot stream was already (partly) sent. */
  #failure(job: ObjectJob, error: unknown, info: S3CallInfo): unknown {
    const mapped = classifyS3Error(error, info);
    if (!streamConsumed(job.body) || !provesNotSent(mapped)) return mapped;
    return new S3Error(
      {
        operation: info.operation,
        shardId: info.shardId,
        bucket: info.bucket,
        key: info.key,
        statusCode: (mapped as { statusCode?: number }).statusCode,
        s3Code: (mapped as { s3Code?: string }).s3Code,
        retryable: false,
        cause: mapped,
      },
      `S3 ${info.operation} of "${info.key}" to bucket "${info.bucket}" on shard "${info.shardId}" failed (${
        (mapped as { s3Code?: string }).s3Code ?? (mapped instanceof Error ? mapped.name : 'error')
      }) after its one-shot stream body was read, so it is not retried: pass a function returning a fresh body to make the put replayable`,
    );
  }

  async #put(shard: ShardState<S3Target>, ctx: RunContext, job: ObjectJob): Promise<S3PutResult> {
    const { client, bucket, prefix } = shard.target;
    const key = prefix + job.key;
    const body = attemptBody(`${job.field}.body`, job.body);
    const sending = withCallSignal(ctx, client, (abortSignal) =>
      client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentLength: body instanceof Uint8Array ? body.byteLength : job.contentLength,
          ContentType: job.contentType,
          Metadata: job.metadata,
        }),
        { abortSignal },
      ),
    );
    let out: Awaited<typeof sending>;
    try {
      out = body instanceof Uint8Array ? await sending : await unlessBodyFails(body, sending);
    } catch (error) {
      // A stream made for this attempt (by the body function) is let go; a one-shot stream is
      // kept, as an attempt that proves nothing was sent may hand it to another target.
      if (!(body instanceof Uint8Array) && job.body.stream === undefined) body.destroy();
      if (error instanceof BodyFailed) throw bodyFailure(error.cause);
      throw this.#failure(job, error, await this.#info(shard, 'PutObject', key));
    }
    return { shardId: shard.id, bucket, key, etag: unquote(out.ETag) };
  }

  async #upload(
    shard: ShardState<S3Target>,
    ctx: RunContext,
    job: UploadJob,
  ): Promise<S3UploadResult> {
    const { client, bucket, prefix } = shard.target;
    const key = prefix + job.key;
    const body: AttemptBody = attemptBody(`${job.field}.body`, job.body);
    const parts = limitParts(partsOf(body, job.partSizeBytes), job.partSizeBytes);
    const release = () => {
      if (!(body instanceof Uint8Array)) body.destroy();
    };
    // Read up to two parts: a body that fits in one is a single PutObject. A body that stalls
    // is let go when the attempt ends; one that fails is the caller's, not the target's.
    let first: IteratorResult<Part>;
    let second: IteratorResult<Part>;
    try {
      first = await nextUnless(parts, ctx.signal);
      second = first.done ? first : await nextUnless(parts, ctx.signal);
    } catch (error) {
      release();
      throw ctx.signal.aborted && error === ctx.signal.reason ? error : bodyFailure(error);
    }
    if (second.done) {
      const only = first.done ? new Uint8Array(0) : first.value.body;
      try {
        const out = await withCallSignal(ctx, client, (abortSignal) =>
          client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: key,
              Body: only,
              ContentLength: only.byteLength,
              ContentType: job.contentType,
              Metadata: job.metadata,
            }),
            { abortSignal },
          ),
        );
        return {
          shardId: shard.id,
          bucket,
          key,
          etag: unquote(out.ETag),
          parts: 1,
          multipart: false,
        };
      } catch (error) {
        throw this.#failure(job, error, await this.#info(shard, 'PutObject', key));
      }
    }
    const result = await multipartUpload({
      client,
      bucket,
      key,
      contentType: job.contentType,
      metadata: job.metadata,
      parts: prepend([first.value!, second.value], parts),
      release,
      concurrency: job.partConcurrency,
      signal: ctx.signal,
      classify: async (error, operation) =>
        this.#failure(job, error, await this.#info(shard, operation, key)),
      upkeep: this.#upkeep,
      cleanupDeadlineMs: job.cleanupDeadlineMs,
    });
    return {
      shardId: shard.id,
      bucket,
      key,
      etag: unquote(result.etag),
      parts: result.parts,
      multipart: true,
    };
  }
}

/**
 * Builds an {@link S3Balancer}. Options: every `Balancer` option plus the transport's (see
 * {@link S3BalancerOptions}).
 *
 * @example
 * const client = createS3Client({ endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, region: 'us-east-1' });
 * const s3 = createS3Balancer({ targets: [{ client, bucket: 'ingest-a' }, { client, bucket: 'ingest-b' }], maxInFlightPerShard: 32 });
 */
export function createS3Balancer(options: S3BalancerOptions): S3Balancer {
  return new S3Balancer(options);
}

function objectJob(field: string, request: S3PutRequest | S3UploadRequest): ObjectJob {
  if (typeof request.key !== 'string' || request.key === '') {
    throw new ConfigError(`${field}.key`, 'must be a non-empty string', request.key);
  }
  checkKeyPath(`${field}.key`, request.key);
  if (request.body === undefined || request.body === null) {
    throw new ConfigError(`${field}.body`, 'is required', request.body, { given: false });
  }
  if (request.contentType !== undefined)
    checkHeaderText(`${field}.contentType`, request.contentType);
  if (request.metadata !== undefined) checkMetadata(`${field}.metadata`, request.metadata);
  return {
    field,
    key: request.key,
    body: prepareBody(`${field}.body`, request.body),
    contentType: request.contentType,
    metadata: request.metadata,
    contentLength: undefined,
    cleanupDeadlineMs:
      typeof request.timeoutMs === 'number' && request.timeoutMs > 0
        ? Math.min(request.timeoutMs, S3_DEFAULTS.timeoutMs)
        : undefined,
  };
}

/** Fails the upload (with a `ConfigError`) past S3's 10 000 parts instead of at Complete. */
async function* limitParts(parts: AsyncGenerator<Part>, partSize: number): AsyncGenerator<Part> {
  for await (const part of parts) {
    if (part.partNumber > S3_LIMITS.maxParts) {
      throw new ConfigError(
        'request.partSizeBytes',
        `is too small for this body: S3 allows at most ${S3_LIMITS.maxParts} parts`,
        partSize,
      );
    }
    yield part;
  }
}

async function* prepend(head: Part[], rest: AsyncIterator<Part>): AsyncGenerator<Part> {
  let finished = false;
  try {
    yield* head;
    for (;;) {
      const next = await rest.next();
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // Stopped early (a failed upload): release the body (a stream is destroyed).
    if (!finished) await rest.return?.();
  }
}

function unquote(etag: string | undefined): string {
  if (etag === undefined) return '';
  return etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
}
