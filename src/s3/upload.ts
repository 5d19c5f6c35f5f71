/**
 * One object written in parts when it is larger than one: `upload()`'s attempts and each object
 * of `s3.ingest`. Bytes are measured; a stream is read up to two parts. What fits in one part is
 * the one put (`put.ts`); the rest is a multipart upload (`multipart.ts`), its stored parts
 * reported to the attempt's transit ledgers as they are stored.
 */

import type { RunContext } from '../admission/run.js';
import { ConfigError } from '../base/errors.js';
import { type AttemptBody, bodyFailure, nextUnless, type Part, partsOf } from './body.js';
import { multipartUpload, type S3Upkeep } from './multipart.js';
import { S3_LIMITS } from './options.js';
import { type Classify, type ObjectWrite, putOnce, unquote } from './put.js';
import type { S3Target } from './types.js';

/** How an object is cut into parts. */
export interface PartSettings {
  partSizeBytes: number;
  partConcurrency: number;
  /** Names the part size in the error past S3's 10 000 parts (`request.partSizeBytes`). */
  partSizeField: string;
  /** The request's own bound on Create and Abort, when it set a `timeoutMs` (else the upkeep's). */
  cleanupDeadlineMs?: number | undefined;
}

/** Where an object landed: its ETag, unquoted, and the parts it took. */
export interface Uploaded {
  etag: string;
  parts: number;
  multipart: boolean;
}

/**
 * Writes `body` as one object on `target`: a single PutObject when it fits in one part, else a
 * multipart upload (aborted on failure, and tracked by `upkeep` so `close()` waits for it).
 */
export async function uploadOnce(
  target: S3Target,
  ctx: RunContext,
  object: ObjectWrite,
  body: AttemptBody,
  parts: PartSettings,
  classify: Classify,
  upkeep: S3Upkeep,
): Promise<Uploaded> {
  const all = limitParts(partsOf(body, parts.partSizeBytes), parts);
  if (body instanceof Uint8Array) {
    return body.byteLength <= parts.partSizeBytes
      ? single(target, ctx, object, body, classify)
      : multipart(target, ctx, object, body, all, parts, classify, upkeep);
  }
  // Read up to two parts: a body that fits in one is a single PutObject. A body that stalls is
  // let go when the attempt ends; one that fails is the caller's, not the target's.
  let first: IteratorResult<Part>;
  let second: IteratorResult<Part>;
  try {
    first = await nextUnless(all, ctx.signal);
    second = first.done ? first : await nextUnless(all, ctx.signal);
  } catch (error) {
    body.destroy();
    throw ctx.signal.aborted && error === ctx.signal.reason ? error : bodyFailure(error);
  }
  if (second.done) {
    const only = first.done ? new Uint8Array(0) : first.value.body;
    return single(target, ctx, object, only, classify);
  }
  const rest = prepend([first.value!, second.value], all);
  return multipart(target, ctx, object, body, rest, parts, classify, upkeep);
}

async function single(
  target: S3Target,
  ctx: RunContext,
  object: ObjectWrite,
  body: Uint8Array,
  classify: Classify,
): Promise<Uploaded> {
  const etag = await putOnce(target, ctx, object, { body, contentLength: undefined }, classify);
  return { etag, parts: 1, multipart: false };
}

async function multipart(
  target: S3Target,
  ctx: RunContext,
  object: ObjectWrite,
  body: AttemptBody,
  parts: AsyncGenerator<Part>,
  settings: PartSettings,
  classify: Classify,
  upkeep: S3Upkeep,
): Promise<Uploaded> {
  const result = await multipartUpload({
    client: target.client,
    bucket: target.bucket,
    key: object.key,
    contentType: object.contentType,
    contentEncoding: object.contentEncoding,
    onPartStored: partReporter(ctx, object, body),
    metadata: object.metadata,
    parts,
    release: () => {
      if (!(body instanceof Uint8Array)) body.destroy();
    },
    concurrency: settings.partConcurrency,
    signal: ctx.signal,
    classify,
    upkeep,
    cleanupDeadlineMs: settings.cleanupDeadlineMs,
  });
  return { etag: unquote(result.etag), parts: result.parts, multipart: true };
}

/**
 * For an object whose bytes an ingestion reports (`object.transit`): each stored part's share of
 * the bytes before compression, counted so that the shares add up to the whole.
 */
function partReporter(
  ctx: RunContext,
  object: ObjectWrite,
  body: AttemptBody,
): ((bytes: number) => void) | undefined {
  const transit = object.transit;
  if (transit === undefined || !(body instanceof Uint8Array)) return undefined;
  const wire = body.byteLength;
  const raw = transit.rawBytes;
  let wireSoFar = 0;
  let rawSoFar = 0;
  return (bytes) => {
    wireSoFar += bytes;
    const rawNow = wireSoFar === wire ? raw : Math.round((raw * wireSoFar) / wire);
    ctx.reportSent(rawNow - rawSoFar, bytes, transit.encoding);
    rawSoFar = rawNow;
  };
}

/** Fails the upload (with a `ConfigError`) past S3's 10 000 parts instead of at Complete. */
async function* limitParts(
  parts: AsyncGenerator<Part>,
  settings: PartSettings,
): AsyncGenerator<Part> {
  for await (const part of parts) {
    if (part.partNumber > S3_LIMITS.maxParts) {
      throw new ConfigError(
        settings.partSizeField,
        `is too small for this body: S3 allows at most ${S3_LIMITS.maxParts} parts`,
        settings.partSizeBytes,
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
