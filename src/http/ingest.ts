/**
 * `http.ingest(source, { path, encode, batch, … })` and `http.createWriteStream(…)`: records in
 * batches, one HTTP request per batch on the shard the balancer picks — an NDJSON body by default
 * (`content-type: application/x-ndjson`), a JSON array with `encode: 'json'`, or whatever an
 * `encode` function returns. A `failures(response, records)` reader turns a bulk API's per-record
 * report (Elasticsearch `_bulk`, Kinesis `PutRecords`) into records retried one by one.
 */
import { ConfigError, messageOf } from '../base/errors.js';
import { checkKnownKeys, checkObject, fn } from '../base/validate.js';
import type { Batch } from '../ingest/batch.js';
import { checkFailures } from '../ingest/failures.js';
import { INGEST_EXTRA_KEYS } from '../ingest/ingest.js';
import { BATCH_DEFAULTS, COMMON_KEYS, checkKeyedPicker } from '../ingest/options.js';
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
  RecordFailure,
  RecordWriteStream,
  RunnerLike,
  SingleIngestOptions,
  SingleRecordOptions,
} from '../ingest/types.js';
import { BatchCompression } from '../transport/batch-compression.js';
import {
  type Compressed,
  type CompressionOption,
  resolveCompression,
} from '../transport/compression.js';
import { HttpError } from './errors.js';
import {
  batchExchange,
  checkHeaders,
  checkMethod,
  checkPath,
  type ExchangeSender,
  SEND_EXCHANGE,
} from './exchange.js';
import type { HeadersFn, HttpHeaders, HttpResponse, HttpTarget, SignHook } from './types.js';

/** How a batch becomes a request body. */
export type HttpEncode<Rec> = 'ndjson' | 'json' | ((records: Rec[]) => string | Uint8Array);

/** Options of `http.createWriteStream` with a `path` (batched HTTP requests). */
export interface HttpRecordOptions<Rec> extends CommonRecordOptions<Rec> {
  /** Request path on every shard, starting with `/` (query included). */
  path: string;
  /** Request method (default `'POST'`). */
  method?: string;
  /**
   * Extra request headers (a `content-type` given here wins over the encoding's) — or a function
   * `(shard, attempt) => headers` (or a promise of them) called once for each attempt, just before
   * it is sent: a token that expires mid-load is fresh for every batch and every retry. Its
   * headers go over the batch's own (`content-type`, the idempotency header), and every value it
   * returns is a secret. See docs/bandwidth.md.
   */
  headers?: Record<string, string> | HeadersFn;
  /**
   * Signs each attempt from what is sent — method, URL, headers and the final body bytes (after
   * compression) — and returns headers to add (see `SignHook`). Its values are secrets.
   */
  sign?: SignHook;
  /**
   * Compresses each batch's body once, before its run, off the main thread: `'gzip'`, `'zstd'`,
   * `'br'`, or `{ codec, level?, minBytes? }` (default none). Every attempt of the batch sends the
   * same bytes, with `content-encoding`; a body shorter than `minBytes` (1 KiB) goes as it is.
   */
  compression?: CompressionOption | false;
  /**
   * The body format: `'ndjson'` (default: each record then `\n`), `'json'` (an array), or a
   * function of the batch's records (then `batch.size` measures records, by default as NDJSON).
   * Strings and `Uint8Array`s are taken as already encoded and pass through untouched.
   */
  encode?: HttpEncode<Rec>;
  /** Batching (defaults: 500 records, 1 MiB, 50 ms of linger — see `BatchOptions`). */
  batch?: BatchOptions<Rec>;
  /**
   * Reads which records a successful response says were not written: `[{ index, error?,
   * retryable? }]`, indexes into `records` (the batch as sent). Those are retried one by one.
   */
  failures?: (response: HttpResponse, records: Rec[]) => readonly RecordFailure[] | undefined;
  /**
   * Where each batch's id goes, for a server that deduplicates by it: a header (default
   * `{ header: 'Idempotency-Key' }`), a query parameter (`{ query: 'insert_deduplication_token' }`
   * for ClickHouse), or `false` for neither. The id is the same for every send of the same records.
   */
  idempotencyKey?: { header: string } | { query: string } | false;
  /**
   * Reads an error answer (status ≥ 400, but push-back): `'rejected'` — the batch's data was
   * refused (it is split in halves to find the records at fault, not retried elsewhere, and no
   * shard's health is charged); `'failed'` — fails for good as it is; `'retry'` — worth another
   * attempt; undefined — the default reading (400 and 422 rejected, 413 split, other 4xx failed,
   * 5xx retried). `body` is the first KiB of the answer, secrets scrubbed. For servers that answer
   * 500 to bad data, such as ClickHouse:
   * `classify: ({ statusCode, body }) => (statusCode === 500 && /Cannot parse/.test(body) ? 'rejected' : undefined)`.
   */
  classify?: (answer: {
    statusCode: number;
    body: string;
  }) => 'rejected' | 'failed' | 'retry' | undefined;
  /** Not given: each batch's request is built from the options above (a `send` takes the core's). */
  send?: undefined;
}

/** Options of `http.ingest` with a `path`. */
export interface HttpIngestOptions<Rec> extends HttpRecordOptions<Rec>, IngestExtras<Rec> {}

/** The core's record options on an HTTP balancer: a `send` of yours, and no `path`. */
type OwnSend<O> = O & { path?: undefined };

/**
 * What `http.ingest` takes: a `path` and the rest of {@link HttpIngestOptions}, each batch sent as
 * one request — or a `send` of your own, as the core's `ingest` takes it. `path` tells the forms
 * apart, so TypeScript checks each object against its own form.
 */
export type HttpBalancerIngestOptions<Rec> =
  | HttpIngestOptions<Rec>
  | OwnSend<SingleIngestOptions<HttpTarget, Rec>>
  | OwnSend<BatchIngestOptions<HttpTarget, Rec>>;

/** What `http.createWriteStream` takes: {@link HttpRecordOptions}, or the core's with a `send`. */
export type HttpBalancerRecordOptions<Rec> =
  | HttpRecordOptions<Rec>
  | OwnSend<SingleRecordOptions<HttpTarget, Rec>>
  | OwnSend<BatchRecordOptions<HttpTarget, Rec>>;

/** What these functions need of an `HttpBalancer` (kept narrow: no import of the class). */
export interface HttpIngestHost extends RunnerLike<HttpTarget>, ExchangeSender {}

const HTTP_KEYS = [
  'path',
  'method',
  'headers',
  'sign',
  'compression',
  'encode',
  'batch',
  'failures',
  'idempotencyKey',
  'classify',
  ...COMMON_KEYS,
];

/** The header a batch's id goes in by default (the IETF draft's, as Stripe and others use it). */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/**
 * Sends every record of `source` in batches, one request each (see {@link HttpIngestOptions}).
 *
 * @example
 * const summary = await http.ingest(rows, { path: '/ingest', key: (row) => row.tenant, batch: { maxRecords: 500 } });
 */
export function httpIngest<Rec>(
  http: HttpIngestHost,
  source: Iterable<Rec> | AsyncIterable<Rec>,
  options: HttpIngestOptions<Rec>,
): Promise<IngestSummary<Rec>> {
  return ingestWithPlan('http.ingest', http, source, options, (field) =>
    httpPlan<Rec>(http, field, options, INGEST_EXTRA_KEYS),
  );
}

/** A write stream of batched HTTP requests (see {@link HttpRecordOptions}). */
export function httpWriteStream<Rec>(
  http: HttpIngestHost,
  options: HttpRecordOptions<Rec>,
): RecordWriteStream<Rec> {
  return writeStreamWithPlan(http, httpPlan<Rec>(http, 'http.createWriteStream', options, []));
}

/** The checked options, and how to build the sink from them. */
function httpPlan<Rec>(
  http: HttpIngestHost,
  field: string,
  options: unknown,
  extra: readonly string[],
): TransportPlan<Rec> {
  const read = readRecordOptions<Rec>(field, options, [...HTTP_KEYS, ...extra], BATCH_DEFAULTS);
  checkKeyedPicker(field, http.picker, options);
  const o = options as HttpRecordOptions<Rec>;
  // Checked as request() checks them, before a record is taken.
  checkPath(o.path, `${field}.path`);
  const method = checkMethod(o.method ?? 'POST', `${field}.method`);
  let made: HeadersFn | undefined;
  if (typeof o.headers === 'function') made = o.headers;
  else if (o.headers !== undefined) checkHeaders(o.headers, `${field}.headers`);
  const sign = o.sign;
  if (sign !== undefined) fn(`${field}.sign`, sign);
  if (o.failures !== undefined) fn(`${field}.failures`, o.failures);
  if (o.classify !== undefined) fn(`${field}.classify`, o.classify);
  const idempotency = checkIdempotencyKey(`${field}.idempotencyKey`, o.idempotencyKey);
  const compressor = resolveCompression(`${field}.compression`, o.compression);
  const headers: HttpHeaders = {};
  const { encoder, custom } = read;
  if (encoder !== undefined) headers['content-type'] = encoder.contentType;
  if (made === undefined) {
    for (const [name, value] of Object.entries(o.headers ?? {})) {
      const lower = name.toLowerCase();
      if (lower === 'content-type') delete headers['content-type'];
      // Refused now rather than at every batch: the encoding is the compressor's to say.
      if (lower === 'content-encoding' && compressor !== undefined) {
        throw new ConfigError(
          `${field}.headers.${name}`,
          'cannot be set with `compression`: it sets content-encoding itself',
          value,
          { secret: true },
        );
      }
      headers[name] = value;
    }
  }
  const path = o.path;
  const failures = o.failures;
  const classify = o.classify;
  const raw = (b: Batch<Rec>): string | Uint8Array =>
    custom === undefined ? b.body() : encodeWith(field, custom, b.records);
  const compression = compressor === undefined ? undefined : new BatchCompression(compressor, raw);
  const send: BatchSender<HttpTarget, Rec> = async (shard, b, ctx) => {
    const body: string | Uint8Array | Compressed =
      compression === undefined ? raw(b) : await compression.body(b);
    let batchHeaders = headers;
    let batchPath = path;
    if (idempotency !== false) {
      if ('header' in idempotency) batchHeaders = { ...headers, [idempotency.header]: b.id };
      else {
        const param = `${encodeURIComponent(idempotency.query)}=${encodeURIComponent(b.id)}`;
        batchPath = `${path}${path.includes('?') ? '&' : '?'}${param}`;
      }
    }
    let response: HttpResponse;
    try {
      const exchange = batchExchange(field, method, batchPath, batchHeaders, made, sign, body);
      response = await http[SEND_EXCHANGE](shard, exchange, ctx);
    } catch (error) {
      throw classify === undefined ? error : classified(field, classify, error);
    }
    if (failures === undefined) return undefined;
    let failed: readonly RecordFailure[] | undefined;
    const records = b.decodedRecords();
    try {
      failed = failures(response, records);
    } catch (error) {
      throw notRetryable(`${field}.failures() threw: ${messageOf(error)}`, error);
    }
    // Checked here, under the name the caller wrote (there is no `send` of theirs to blame).
    if (failed === undefined) return undefined;
    if (typeof (failed as { then?: unknown }).then === 'function') {
      throw new ConfigError(
        `${field}.failures`,
        'must return its list, not a promise: the response body is already read (`response.text()`, `response.json()` are sync)',
        failed,
      );
    }
    return { failed: checkFailures(`${field}.failures() result`, failed, records.length) };
  };
  return batchPlan(http, field, read, () => send, compression);
}

/** `idempotencyKey`, checked: the default header, a header or a query parameter, or false. */
function checkIdempotencyKey(
  field: string,
  value: unknown,
): { header: string } | { query: string } | false {
  if (value === undefined) return { header: IDEMPOTENCY_HEADER };
  if (value === false) return false;
  checkObject(field, value);
  checkKnownKeys(field, value, ['header', 'query']);
  const v = value as { header?: unknown; query?: unknown };
  if ((v.header === undefined) === (v.query === undefined)) {
    throw new ConfigError(field, 'must be { header: name }, { query: name } or false', value);
  }
  if (v.header !== undefined) {
    if (typeof v.header !== 'string' || v.header === '') {
      throw new ConfigError(`${field}.header`, 'must be a non-empty header name', v.header);
    }
    // Checked as a request's header names are (a token: no space, colon or newline).
    checkHeaders({ [v.header]: 'x' }, `${field}.header`);
    return { header: v.header };
  }
  if (typeof v.query !== 'string' || v.query === '') {
    throw new ConfigError(`${field}.query`, 'must be a non-empty query parameter name', v.query);
  }
  return { query: v.query };
}

/**
 * An error answer read by the caller's `classify`: `rejected` marks it so (the batch is split
 * to find the records at fault), and — as `failed` does — not retryable, so no other shard is
 * tried and no health is charged; `retry` makes it retryable. Anything else leaves it as it is.
 */
function classified(
  field: string,
  classify: NonNullable<HttpRecordOptions<unknown>['classify']>,
  error: unknown,
): unknown {
  if (!(error instanceof HttpError)) return error;
  let verdict: unknown;
  try {
    verdict = classify({ statusCode: error.statusCode, body: error.excerpt });
  } catch (thrown) {
    return notRetryable(`${field}.classify() threw: ${messageOf(thrown)}`, thrown);
  }
  if (verdict === undefined) return error;
  if (verdict !== 'rejected' && verdict !== 'failed' && verdict !== 'retry') {
    return new ConfigError(
      `${field}.classify`,
      "must return 'rejected', 'failed', 'retry' or undefined",
      verdict,
    );
  }
  const set = (name: string, value: boolean) =>
    Object.defineProperty(error, name, { value, enumerable: true, configurable: true });
  set('retryable', verdict === 'retry');
  set('rejected', verdict === 'rejected');
  return error;
}
