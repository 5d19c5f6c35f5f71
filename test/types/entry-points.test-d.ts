/**
 * Types that guide a caller, checked by `npm run typecheck` (tsc), not run: an `@ts-expect-error`
 * fails the check when the line under it compiles, an `expectTypeOf` when the type differs.
 * `error-messages.test.ts` checks what the errors below say.
 */
import type { Writable } from 'node:stream';
import { expectTypeOf } from 'vitest';
import {
  type HttpBalancer,
  type HttpError,
  type HttpTarget,
  isShardwiseError as isHttpError,
} from '../../src/http/index.js';
import {
  type Balancer,
  type BalancerClosedError,
  type BatchContext,
  type ConfigError,
  type IngestError,
  isShardwiseError,
  type MissingKeyError,
  type NoShardAvailableError,
  type PickerError,
  type PushBackError,
  type QueueFullError,
  type RetriesExhaustedError,
  type RunContext,
  type ShardRemovedError,
  type ShardState,
  type ShardUnavailableError,
  type ShardwiseErrorLike,
  type TimeoutError,
  type WriteFailedError,
} from '../../src/index.js';
import {
  isShardwiseError as isS3Error,
  type S3Balancer,
  type S3Error,
  type S3Target,
} from '../../src/s3/index.js';

interface Row {
  id: string;
  n: number;
}
declare const rows: AsyncIterable<Row>;
declare const balancer: Balancer<URL>;
declare const http: HttpBalancer;
declare const s3: S3Balancer;
declare function post(target: URL, body: string): Promise<void>;

// ——— unknown options: an error on each entry point ———

// @ts-expect-error `compress` is no option of the core ingest
await balancer.ingest(rows, { send: async () => {}, compress: 'gzip' });
// @ts-expect-error nor of its batch form
await balancer.ingest(rows, { batch: {}, send: async () => {}, compress: 'gzip' });
// @ts-expect-error nor of the core write stream
balancer.createWriteStream({ send: async () => {}, compress: 'gzip' });
// @ts-expect-error nor of http.ingest's own form
await http.ingest(rows, { path: '/ingest', compress: 'gzip' });
// @ts-expect-error nor of http.createWriteStream's
http.createWriteStream({ path: '/ingest', compress: 'gzip' });
// @ts-expect-error nor of s3.ingest's own form
await s3.ingest(rows, { objectKey: () => 'k', compress: 'gzip' });
// @ts-expect-error nor of s3.createWriteStream's
s3.createWriteStream({ objectKey: () => 'k', compress: 'gzip' });
// @ts-expect-error nor of the core form on a transport
await http.ingest(rows, { send: async () => {}, compress: 'gzip' });
// @ts-expect-error a path is no option of the core form
await balancer.ingest(rows, { path: '/ingest', send: async () => {} });

// ——— `send`'s parameters, typed in both forms without an annotation ———

await balancer.ingest(rows, {
  send: async (shard, record, ctx) => {
    expectTypeOf(shard).toEqualTypeOf<ShardState<URL>>();
    expectTypeOf(record).toEqualTypeOf<Row>();
    expectTypeOf(ctx).toEqualTypeOf<RunContext>();
    await post(shard.target, record.id);
  },
});
await balancer.ingest(rows, {
  batch: { maxRecords: 500, size: (row) => row.id.length },
  key: (row) => row.id,
  send: async (shard, records, ctx) => {
    expectTypeOf(shard).toEqualTypeOf<ShardState<URL>>();
    expectTypeOf(records).toEqualTypeOf<Row[]>();
    expectTypeOf(ctx).toEqualTypeOf<BatchContext>();
    expectTypeOf(ctx.batchId).toEqualTypeOf<string>();
    await post(shard.target, records.map((r) => r.id).join('\n'));
    return { failed: [{ index: 0, retryable: true }] };
  },
});
expectTypeOf(
  balancer.createWriteStream({
    batch: { lingerMs: 10 },
    send: async (shard, records: Row[]) => {
      expectTypeOf(shard).toEqualTypeOf<ShardState<URL>>();
      await post(shard.target, String(records.length));
    },
  }),
).toExtend<Writable>();
balancer.createWriteStream({
  batch: {},
  send: async (_shard, records) => {
    expectTypeOf(records).toEqualTypeOf<unknown[]>(); // no source: the records' type is not known
  },
});
// @ts-expect-error the batch form's send takes the records, not one record
await balancer.ingest(rows, { batch: {}, send: async (_shard, record: Row) => void record });
// The transports take the core form too, one record per run.
await http.ingest(rows, {
  send: async (shard, record) => {
    expectTypeOf(shard).toEqualTypeOf<ShardState<HttpTarget>>();
    expectTypeOf(record).toEqualTypeOf<Row>();
  },
});
await s3.ingest(rows, {
  key: (row) => row.id,
  send: async (shard, record) => {
    expectTypeOf(shard).toEqualTypeOf<ShardState<S3Target>>();
    expectTypeOf(record).toEqualTypeOf<Row>();
  },
});
// The transports' own forms type their callbacks from the source.
await http.ingest(rows, {
  path: '/ingest',
  key: (row) => {
    expectTypeOf(row).toEqualTypeOf<Row>();
    return row.id;
  },
  encode: (records) => {
    expectTypeOf(records).toEqualTypeOf<Row[]>();
    return JSON.stringify(records);
  },
  failures: (_response, records) => {
    expectTypeOf(records).toEqualTypeOf<Row[]>();
    return [];
  },
});
await s3.ingest(rows, {
  objectKey: ({ shardId, seq }) => `${shardId}-${seq}.jsonl`,
  onFailed: (row) => expectTypeOf(row).toEqualTypeOf<Row>(),
});

// ——— isShardwiseError narrows to the class of the code ———

declare const error: unknown;
if (isShardwiseError(error)) expectTypeOf(error).toEqualTypeOf<ShardwiseErrorLike>();
if (isShardwiseError(error, 'SHARDWISE_INGEST_STOPPED')) {
  expectTypeOf(error).toEqualTypeOf<IngestError>();
  expectTypeOf(error.summary.written).toEqualTypeOf<number>();
}
if (isShardwiseError(error, 'SHARDWISE_WRITE_FAILED'))
  expectTypeOf(error).toEqualTypeOf<WriteFailedError>();
if (isShardwiseError(error, 'SHARDWISE_CONFIG')) expectTypeOf(error).toEqualTypeOf<ConfigError>();
if (isShardwiseError(error, 'SHARDWISE_NO_SHARD'))
  expectTypeOf(error).toEqualTypeOf<NoShardAvailableError>();
if (isShardwiseError(error, 'SHARDWISE_QUEUE_FULL'))
  expectTypeOf(error).toEqualTypeOf<QueueFullError>();
if (isShardwiseError(error, 'SHARDWISE_TIMEOUT')) expectTypeOf(error).toEqualTypeOf<TimeoutError>();
if (isShardwiseError(error, 'SHARDWISE_RETRIES_EXHAUSTED'))
  expectTypeOf(error).toEqualTypeOf<RetriesExhaustedError>();
if (isShardwiseError(error, 'SHARDWISE_CLOSED'))
  expectTypeOf(error).toEqualTypeOf<BalancerClosedError>();
if (isShardwiseError(error, 'SHARDWISE_MISSING_KEY'))
  expectTypeOf(error).toEqualTypeOf<MissingKeyError>();
if (isShardwiseError(error, 'SHARDWISE_PICKER')) expectTypeOf(error).toEqualTypeOf<PickerError>();
if (isShardwiseError(error, 'SHARDWISE_PUSH_BACK'))
  expectTypeOf(error).toEqualTypeOf<PushBackError>();
if (isShardwiseError(error, 'SHARDWISE_SHARD_REMOVED'))
  expectTypeOf(error).toEqualTypeOf<ShardRemovedError>();
if (isShardwiseError(error, 'SHARDWISE_SHARD_UNAVAILABLE'))
  expectTypeOf(error).toEqualTypeOf<ShardUnavailableError>();
// The core cannot name a transport's class: its code narrows to the shape every error has.
if (isShardwiseError(error, 'SHARDWISE_HTTP')) {
  expectTypeOf(error).toExtend<ShardwiseErrorLike>();
  expectTypeOf(error.code).toEqualTypeOf<'SHARDWISE_HTTP'>();
}
// Each transport's entry point names its own, and every other code's.
if (isHttpError(error, 'SHARDWISE_HTTP')) expectTypeOf(error).toEqualTypeOf<HttpError>();
if (isHttpError(error, 'SHARDWISE_INGEST_STOPPED'))
  expectTypeOf(error).toEqualTypeOf<IngestError>();
if (isS3Error(error, 'SHARDWISE_S3')) expectTypeOf(error).toEqualTypeOf<S3Error>();
if (isS3Error(error, 'SHARDWISE_TIMEOUT')) expectTypeOf(error).toEqualTypeOf<TimeoutError>();
// @ts-expect-error an unknown code
isShardwiseError(error, 'SHARDWISE_NOPE');
