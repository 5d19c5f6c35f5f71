/**
 * `createS3Balancer`: a `Balancer` built with the S3 transport (`s3/transport.ts`), its calls
 * (`putObject`, `upload`) beside the Balancer's API — composed, not a subclass: no logic here.
 * `ingest`, `createWriteStream` and `stats` are the Balancer's, which uses the transport's batch
 * call; the `S3Balancer` type names what they take and give.
 */
import { Balancer } from '../core/balancer.js';
import { type ComposedConstructor, composedName, withCalls } from '../core/transport.js';
import type { IngestSummary, RecordSource, RecordWriteStream } from '../ingest/types.js';
import type { S3BalancerIngestOptions, S3BalancerRecordOptions } from './ingest.js';
import { type S3Spec, s3Transport } from './transport.js';
import type {
  S3BalancerOptions,
  S3BalancerStats,
  S3PutRequest,
  S3PutResult,
  S3Target,
  S3UploadRequest,
  S3UploadResult,
} from './types.js';

/**
 * A `Balancer` over S3 buckets (or S3 endpoints): each target is `{ client, bucket, prefix }`.
 * Everything a `Balancer` does (run, wrap, ingest, events, stats, membership; `instanceof
 * Balancer` holds) plus `putObject()` and `upload()` (multipart, for large bodies) — the S3
 * transport's, which the balancer is built with. Built by {@link createS3Balancer} (or `new
 * S3Balancer(options)`, the same). Build clients with {@link createS3Client} for keep-alive
 * connection reuse.
 *
 * @example
 * const client = createS3Client({ region: 'eu-west-1' });
 * const s3 = createS3Balancer({ targets: ['ingest-a', 'ingest-b', 'ingest-c'].map((bucket) => ({ client, bucket })) });
 * const { shardId, etag } = await s3.putObject({ key: 'rows/0001.jsonl', body: rows });
 * await s3.close();
 */
export interface S3Balancer extends Balancer<S3Target, S3Spec>, S3Calls {
  /**
   * Writes every record of `source` as objects, one per batch (`{ objectKey, encode, batch }`:
   * NDJSON by default, multipart above `partSizeBytes`), or — given a `send` — as the core
   * `ingest` does. See `S3IngestOptions`.
   *
   * @example
   * await s3.ingest(rows, { objectKey: ({ shardId, seq }) => `train/2024-06-01/${shardId}-${seq}.jsonl` });
   */
  ingest<Rec>(
    source: RecordSource<Rec>,
    options: S3BalancerIngestOptions<Rec>,
  ): Promise<IngestSummary<Rec>>;
  /**
   * A write stream of records written as objects, one per batch (`{ objectKey, encode, batch }`),
   * or — given a `send` — the core write stream.
   *
   * @example
   * await pipeline(Readable.from(rows), s3.createWriteStream({ objectKey: ({ shardId, seq }) => `rows/${shardId}-${seq}.jsonl` }));
   */
  createWriteStream<Rec>(options: S3BalancerRecordOptions<Rec>): RecordWriteStream<Rec>;
  /** The core's snapshot. */
  stats(): S3BalancerStats;
}

/** The S3 transport's own calls, beside the Balancer's API on an {@link S3Balancer}. */
export interface S3Calls {
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
  putObject(request: S3PutRequest): Promise<S3PutResult>;

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
  upload(request: S3UploadRequest): Promise<S3UploadResult>;
}

const { Name, build } = composedName('S3Balancer', (options: S3BalancerOptions) => {
  const { core, transport } = s3Transport(options);
  let balancer: Balancer<S3Target, S3Spec>;
  try {
    balancer = new Balancer(core, transport);
  } catch (error) {
    // Invalid core options: the clients built from target options are not handed out.
    transport.discard();
    throw error;
  }
  const calls: S3Calls = {
    putObject: (request) => transport.putObject(request),
    upload: (request) => transport.upload(request),
  };
  return withCalls(balancer, calls) as S3Balancer;
});

/**
 * Builds an {@link S3Balancer}. Options: every `Balancer` option plus the transport's (see
 * {@link S3BalancerOptions}).
 *
 * @example
 * const client = createS3Client({ endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, region: 'us-east-1' });
 * const s3 = createS3Balancer({ targets: [{ client, bucket: 'ingest-a' }, { client, bucket: 'ingest-b' }], maxInFlightPerShard: 32 });
 */
export function createS3Balancer(options: S3BalancerOptions): S3Balancer {
  return build(options);
}

/**
 * `new S3Balancer(options)` is {@link createS3Balancer}`(options)`; `instanceof S3Balancer` holds
 * for every balancer either built.
 */
export const S3Balancer: ComposedConstructor<S3BalancerOptions, S3Balancer> = Name;
