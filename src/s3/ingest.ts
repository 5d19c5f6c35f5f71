/**
 * `s3.ingest(source, { objectKey, encode, batch, … })` and `s3.createWriteStream(…)`: records in
 * batches, one object per batch on the target the balancer picks — the way training data is
 * written as shards to an object store. A batch is an NDJSON object (or a JSON array, or what an
 * `encode` function returns) of at most `batch.maxBytes`; above `partSizeBytes` it goes up as a
 * multipart upload. `objectKey({ shardId, seq, count })` names it once, when its first attempt
 * starts (`seq` counts the batches of each shard from 0); every retry puts the same key, and a
 * name given twice fails the later batch instead of overwriting the earlier one's object.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { RunContext } from '../admission/run.js';
import { ConfigError, messageOf } from '../base/errors.js';
import { wallClock } from '../base/runtime.js';
import type { ShardState } from '../base/types.js';
import { fn, positiveInt } from '../base/validate.js';
import type { Batch } from '../ingest/batch.js';
import { INGEST_EXTRA_KEYS } from '../ingest/ingest.js';
import { COMMON_KEYS, checkKeyedPicker } from '../ingest/options.js';
import type { BatchSender } from '../ingest/sender.js';
import {
  batchPlan,
  encodeWith,
  ingestWithPlan,
  notRetryable,
  readRecordOptions,
  type TransportPlan,
  writeStreamWithPlan,
} from '../ingest/transport-plan.js';
import type {
  BatchIngestOptions,
  BatchOptions,
  BatchRecordOptions,
  CommonRecordOptions,
  IngestExtras,
  IngestSummary,
  RecordWriteStream,
  RunnerLike,
  SingleIngestOptions,
  SingleRecordOptions,
} from '../ingest/types.js';
import { provesNotSent } from '../retry/options.js';
import { BatchCompression } from '../transport/batch-compression.js';
import {
  type Compressed,
  type CompressionOption,
  resolveCompression,
} from '../transport/compression.js';
import { partsOf } from './body.js';
import { withCallSignal } from './call-signal.js';
import { classifyS3Error, credentialSecrets, type S3CallInfo } from './classify.js';
import { multipartUpload, type S3Upkeep } from './multipart.js';
import {
  checkHeaderText,
  checkKeyPath,
  checkMetadata,
  checkPartSize,
  S3_DEFAULTS,
} from './options.js';
import type { S3Target } from './types.js';

const MiB = 1024 * 1024;

/** Batching defaults of `s3.ingest`: objects of up to 100 000 records or 16 MiB, 10 s of linger. */
export const S3_BATCH_DEFAULTS = { maxRecords: 100_000, maxBytes: 16 * MiB, lingerMs: 10_000 };

/** What `objectKey` is told about the object it names. */
export interface S3ObjectInfo {
  /** The target (shard) the batch's first attempt runs on. */
  shardId: string;
  /** This target's batch count in this ingestion, from 0. */
  seq: number;
  /** Records in the batch. */
  count: number;
  /**
   * The name suffix of the object's encoding: `'.gz'`, `'.zst'` or `'.br'` when `compression`
   * compressed it, `''` when it is stored as it is (no `compression`, or shorter than `minBytes`):
   * `` `${shardId}-${seq}.jsonl${suffix}` ``.
   */
  suffix: string;
}

/** Options of `s3.createWriteStream` with an `objectKey` (batches as objects). */
export interface S3RecordOptions<Rec> extends CommonRecordOptions<Rec> {
  /**
   * The object key of a batch (the target's `prefix` is prepended). Called once per batch;
   * include something unique to the run (a date, a job id) so two ingestions never share keys.
   * A name an earlier batch of the ingestion has (of its last million) fails the batch
   * (`ConfigError`) rather than overwrite that object: a retry may move a batch to any target, so
   * use `shardId` and `seq`.
   */
  objectKey: (info: S3ObjectInfo) => string;
  /** `'ndjson'` (default), `'json'` (an array), or a function of the batch's records. */
  encode?: 'ndjson' | 'json' | ((records: Rec[]) => string | Uint8Array);
  /** The objects' content type (default: the encoding's). */
  contentType?: string;
  /** User metadata on every object (`x-amz-meta-*`). */
  metadata?: Record<string, string>;
  /** Batching (defaults: 100 000 records, 16 MiB, 10 s of linger — see `BatchOptions`). */
  batch?: BatchOptions<Rec>;
  /** Objects larger than this go up as multipart uploads of parts this size (default 8 MiB, at least 5 MiB). */
  partSizeBytes?: number;
  /** Parts of one object sent at once (default 4). */
  partConcurrency?: number;
  /**
   * Compresses each object once, before its batch's run, off the main thread: `'gzip'`,
   * `'zstd'`, `'br'`, or `{ codec, level?, minBytes? }` (default none). The object is stored with
   * its `ContentEncoding`, and `objectKey` is offered the codec's `suffix`.
   */
  compression?: CompressionOption | false;
  /** Not given: each batch's object is written from the options above (a `send` takes the core's). */
  send?: undefined;
}

/** Options of `s3.ingest` with an `objectKey`. */
export interface S3IngestOptions<Rec> extends S3RecordOptions<Rec>, IngestExtras<Rec> {}

/** The core's record options on an S3 balancer: a `send` of yours, and no `objectKey`. */
type OwnSend<O> = O & { objectKey?: undefined };

/**
 * What `s3.ingest` takes: an `objectKey` and the rest of {@link S3IngestOptions}, each batch
 * written as one object — or a `send` of your own, as the core's `ingest` takes it. `objectKey`
 * tells the forms apart, so TypeScript checks each object against its own form.
 */
export type S3BalancerIngestOptions<Rec> =
  | S3IngestOptions<Rec>
  | OwnSend<SingleIngestOptions<S3Target, Rec>>
  | OwnSend<BatchIngestOptions<S3Target, Rec>>;

/** What `s3.createWriteStream` takes: {@link S3RecordOptions}, or the core's with a `send`. */
export type S3BalancerRecordOptions<Rec> =
  | S3RecordOptions<Rec>
  | OwnSend<SingleRecordOptions<S3Target, Rec>>
  | OwnSend<BatchRecordOptions<S3Target, Rec>>;

const S3_KEYS = [
  'objectKey',
  'encode',
  'contentType',
  'metadata',
  'batch',
  'partSizeBytes',
  'partConcurrency',
  'compression',
  ...COMMON_KEYS,
];

/**
 * Writes every record of `source` as objects of one batch each (see {@link S3IngestOptions}).
 *
 * @example
 * const day = '2024-06-01';
 * await s3.ingest(rows, { objectKey: ({ shardId, seq }) => `train/${day}/${shardId}-${String(seq).padStart(6, '0')}.jsonl` });
 */
export function s3Ingest<Rec>(
  s3: RunnerLike<S3Target>,
  upkeep: S3Upkeep,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  options: S3IngestOptions<Rec>,
): Promise<IngestSummary<Rec>> {
  return ingestWithPlan('s3.ingest', s3, source, options, (field) =>
    s3Plan<Rec>(s3, upkeep, field, options, INGEST_EXTRA_KEYS),
  );
}

/** A write stream of objects, one per batch (see {@link S3RecordOptions}). */
export function s3WriteStream<Rec>(
  s3: RunnerLike<S3Target>,
  upkeep: S3Upkeep,
  options: S3RecordOptions<Rec>,
): RecordWriteStream<Rec> {
  return writeStreamWithPlan(s3, s3Plan<Rec>(s3, upkeep, 's3.createWriteStream', options, []));
}

/**
 * Object names an ingestion remembers, to refuse one given twice: a million (~100 MB at worst),
 * far past any run of objects whose names clash by mistake (a constant, a name without the
 * target's id); past that, the oldest are forgotten.
 */
export const MAX_REMEMBERED_NAMES = 1_000_000;

/** The last `limit` distinct names added, in a set that forgets the oldest first. */
export class RecentNames {
  readonly #names = new Set<string>();

  constructor(private readonly limit: number) {}

  /** Adds `name`; false, changing nothing, when it is already there. */
  add(name: string): boolean {
    const names = this.#names;
    if (names.has(name)) return false;
    names.add(name);
    // A Set iterates in insertion order: its first name is the oldest.
    if (names.size > this.limit) names.delete(names.values().next().value!);
    return true;
  }
}

/** The checked options, and how to build the sink from them. */
function s3Plan<Rec>(
  s3: RunnerLike<S3Target>,
  upkeep: S3Upkeep,
  field: string,
  options: unknown,
  extra: readonly string[],
): TransportPlan<Rec> {
  const read = readRecordOptions<Rec>(field, options, [...S3_KEYS, ...extra], S3_BATCH_DEFAULTS);
  checkKeyedPicker(field, s3.picker, options);
  const o = options as S3RecordOptions<Rec>;
  fn(`${field}.objectKey`, o.objectKey);
  if (o.contentType !== undefined) checkHeaderText(`${field}.contentType`, o.contentType);
  if (o.metadata !== undefined) checkMetadata(`${field}.metadata`, o.metadata);
  const partSize =
    o.partSizeBytes === undefined
      ? S3_DEFAULTS.partSizeBytes
      : checkPartSize(`${field}.partSizeBytes`, o.partSizeBytes);
  const partConcurrency =
    o.partConcurrency === undefined
      ? S3_DEFAULTS.partConcurrency
      : positiveInt(`${field}.partConcurrency`, o.partConcurrency);
  const objectKey = o.objectKey;
  const { encoder, custom } = read;
  const contentType = o.contentType ?? encoder?.contentType ?? 'application/octet-stream';
  const metadata = o.metadata;
  const compressor = resolveCompression(`${field}.compression`, o.compression);
  const raw = (b: Batch<Rec>): Uint8Array =>
    custom === undefined ? b.body() : bytesOf(encodeWith(field, custom, b.records));
  const compression = compressor === undefined ? undefined : new BatchCompression(compressor, raw);

  const sendWith = (): BatchSender<S3Target, Rec> => {
    // Batches per target so far: each target's objects are numbered from 0.
    const seqs = new Map<string, number>();
    // The names given out: a batch's retry may land on any target, so a name given twice could
    // overwrite another batch's object wherever the two meet.
    const names = new RecentNames(MAX_REMEMBERED_NAMES);
    return async (shard, b, ctx) => {
      let named = b.tag as Named | undefined;
      let body: Compressed | undefined =
        compression === undefined ? undefined : await compression.body(b);
      if (named === undefined) {
        const seq = seqs.get(shard.id) ?? 0;
        seqs.set(shard.id, seq + 1);
        const encoding = body?.encoding;
        const suffix = encoding === undefined ? '' : compressor!.suffix;
        const name = nameOf(field, objectKey, { shardId: shard.id, seq, count: b.count, suffix });
        if (!names.add(name)) {
          throw new ConfigError(
            `${field}.objectKey`,
            'must return a name no earlier batch of the ingestion has (a retried batch may land on any target, so include shardId and seq)',
            name,
          );
        }
        named = { name, encoding };
        b.tag = named;
      } else if (named.encoding !== undefined && body?.encoding === undefined) {
        // Records left the batch since it was named, and it shrank below `minBytes`: compressed
        // all the same, so the object is what its name says.
        body = await compression!.body(b, 0);
      }
      const bytes = body === undefined ? raw(b) : (body.body as Uint8Array);
      return putBatch(shard, named.name, bytes, ctx, {
        contentType,
        contentEncoding: body?.encoding,
        rawBytes: body?.rawBytes,
        metadata,
        partSize,
        partConcurrency,
        upkeep,
      });
    };
  };
  return batchPlan(s3, field, read, sendWith, compression);
}

/** A batch's object name, and the encoding it was named for. */
interface Named {
  name: string;
  encoding: string | undefined;
}

interface PutSettings {
  contentType: string;
  /** The body's `ContentEncoding`, when it is compressed. */
  contentEncoding: string | undefined;
  /** The body's length before compression (its own length when it is not compressed). */
  rawBytes: number | undefined;
  metadata: Record<string, string> | undefined;
  partSize: number;
  partConcurrency: number;
  upkeep: S3Upkeep;
}

/**
 * One object: a PutObject, or a multipart upload above the part size. Its bytes are reported to
 * the attempt (the transit ledgers) once S3 answered, or once they may have left: a put that
 * provably never left reports nothing, and a multipart upload reports each part S3 stored.
 */
async function putBatch(
  shard: ShardState<S3Target>,
  name: string,
  body: Uint8Array,
  ctx: RunContext,
  s: PutSettings,
): Promise<undefined> {
  const { client, bucket, prefix } = shard.target;
  const key = prefix + name;
  const info = (operation: string): S3CallInfo => ({
    operation,
    shardId: shard.id,
    bucket,
    key,
    defaultRetryAfterMs: s.upkeep.defaultRetryAfterMs,
    maxRetryAfterMs: s.upkeep.maxRetryAfterMs,
    wallClock,
  });
  const wire = body.byteLength;
  const raw = s.rawBytes ?? wire;
  if (wire > s.partSize) {
    // Each stored part's share of the raw bytes, counted so that the shares add up to `raw`.
    let wireSoFar = 0;
    let rawSoFar = 0;
    const onPartStored = (bytes: number): void => {
      wireSoFar += bytes;
      const rawNow = wireSoFar === wire ? raw : Math.round((raw * wireSoFar) / wire);
      ctx.reportSent(rawNow - rawSoFar, bytes, s.contentEncoding);
      rawSoFar = rawNow;
    };
    await multipartUpload({
      client,
      bucket,
      key,
      contentType: s.contentType,
      contentEncoding: s.contentEncoding,
      onPartStored,
      metadata: s.metadata,
      parts: partsOf(body, s.partSize),
      release: noop,
      concurrency: s.partConcurrency,
      signal: ctx.signal,
      classify: async (error, operation) =>
        classifyS3Error(error, { ...info(operation), secrets: await credentialSecrets(client) }),
      upkeep: s.upkeep,
    });
    return undefined;
  }
  try {
    await withCallSignal(ctx, client, (abortSignal) =>
      client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentLength: wire,
          ContentType: s.contentType,
          ContentEncoding: s.contentEncoding,
          Metadata: s.metadata,
        }),
        { abortSignal },
      ),
    );
  } catch (error) {
    const classified = classifyS3Error(error, {
      ...info('PutObject'),
      secrets: await credentialSecrets(client),
    });
    const answered = typeof (classified as { statusCode?: unknown }).statusCode === 'number';
    if (answered || !provesNotSent(classified)) ctx.reportSent(raw, wire, s.contentEncoding);
    throw classified;
  }
  ctx.reportSent(raw, wire, s.contentEncoding);
  return undefined;
}

/** `objectKey(info)`, checked; a throw or a bad key fails the batch without a retry. */
function nameOf(
  field: string,
  objectKey: (info: S3ObjectInfo) => string,
  info: S3ObjectInfo,
): string {
  let name: unknown;
  try {
    name = objectKey(info);
  } catch (error) {
    throw notRetryable(`${field}.objectKey() threw: ${messageOf(error)}`, error);
  }
  if (typeof name !== 'string' || name === '') {
    throw new ConfigError(`${field}.objectKey`, 'must return a non-empty string', name);
  }
  checkKeyPath(`${field}.objectKey`, name);
  return name;
}

function bytesOf(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

function noop(): void {}
