import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Clock } from '../base/types.js';
import { bodyFailure, nextUnless, type Part } from './body.js';

/** One multipart upload on one target. */
export interface MultipartJob {
  client: S3Client;
  bucket: string;
  key: string;
  contentType: string | undefined;
  /** The object's `ContentEncoding` (a compressed body), if any. */
  contentEncoding?: string | undefined;
  metadata: Record<string, string> | undefined;
  /** Told the bytes of each part S3 stored, as it stores it (the transit ledger counts them). */
  onPartStored?: ((bytes: number) => void) | undefined;
  /** The parts, numbered from 1, in order. Pulled by up to `concurrency` senders at once. */
  parts: AsyncIterator<Part>;
  /** Lets go of the body (destroys a stream): a read it blocks in then ends. */
  release: () => void;
  concurrency: number;
  /** The attempt's signal: aborts every part in flight. */
  signal: AbortSignal;
  /** Maps an error of `operation` to what the balancer should see (the S3 classifier). */
  classify: (error: unknown, operation: string) => Promise<unknown>;
  upkeep: Pick<S3Upkeep, 'track' | 'cleanupDeadlineMs' | 'clock'>;
  /** The request's own bound on Create and Abort, when it set a `timeoutMs` (else the upkeep's). */
  cleanupDeadlineMs?: number | undefined;
}

/** What the S3 calls of a balancer share: its retry-after settings and its unfinished uploads. */
export interface S3Upkeep {
  /** Holds `close()` until `done` settles: an upload from its start to its Complete or Abort. */
  track(done: Promise<void>): void;
  /** Bound on a CreateMultipartUpload and an AbortMultipartUpload, ms (the attempt's timeout). */
  cleanupDeadlineMs: number;
  /** The balancer's clock: the cleanup deadline runs on it, as every other wait does. */
  clock: Clock;
  defaultRetryAfterMs: number;
  maxRetryAfterMs: number;
}

/**
 * CreateMultipartUpload, UploadPart × n (up to `concurrency` at once), CompleteMultipartUpload.
 * On any failure the upload is aborted (AbortMultipartUpload, without the attempt's signal, so
 * it runs even after a timeout, but within `cleanupDeadlineMs`) and the first error is thrown:
 * S3 would otherwise keep the parts, and bill for them, until a lifecycle rule removes them.
 * `close()` waits for the whole upload (`upkeep.track`), so a close without drain aborts it
 * before the balancer destroys the clients it built.
 */
export async function multipartUpload(job: MultipartJob): Promise<{ etag: string; parts: number }> {
  if (job.signal.aborted) throw job.signal.reason;
  let finished!: () => void;
  job.upkeep.track(
    new Promise<void>((resolve) => {
      finished = resolve;
    }),
  );
  try {
    return await upload(job);
  } finally {
    finished();
  }
}

async function upload(job: MultipartJob): Promise<{ etag: string; parts: number }> {
  const { client, bucket, key } = job;
  const deadlineMs = job.cleanupDeadlineMs ?? job.upkeep.cleanupDeadlineMs;
  // Until Create answers, the body's parts read so far are this attempt's alone: let them go.
  const release = (): void => {
    job.release();
    job.parts.return?.().catch(noop);
  };
  let uploadId: string | undefined;
  try {
    // Not the attempt's signal: an abort after S3 created the upload would lose its id, and so
    // the means to abort it. An attempt that ended meanwhile is seen below.
    const created = await withDeadline(job.upkeep.clock, deadlineMs, (abortSignal) =>
      client.send(
        new CreateMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          ContentType: job.contentType,
          ContentEncoding: job.contentEncoding,
          Metadata: job.metadata,
        }),
        { abortSignal },
      ),
    );
    uploadId = created.UploadId;
  } catch (error) {
    release();
    throw await job.classify(error, 'CreateMultipartUpload');
  }
  if (uploadId === undefined) {
    release();
    throw await job.classify(
      new Error('CreateMultipartUpload answered without an UploadId'),
      'CreateMultipartUpload',
    );
  }
  const id = uploadId;
  const done: CompletedPart[] = [];
  const stop = new AbortController();
  const signal = AbortSignal.any([job.signal, stop.signal]);
  let failure: { error: unknown } | undefined;

  const sender = async (): Promise<void> => {
    while (failure === undefined) {
      let next: IteratorResult<Part>;
      try {
        next = await nextUnless(job.parts, signal);
      } catch (error) {
        // The attempt ended while the body stalled, or the body itself failed (a stream error,
        // too many parts): not the target's doing.
        fail(signal.aborted && error === signal.reason ? error : bodyFailure(error));
        return;
      }
      if (next.done || failure !== undefined) return;
      const part = next.value;
      try {
        const out = await client.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: id,
            PartNumber: part.partNumber,
            Body: part.body,
            ContentLength: part.body.byteLength,
          }),
          { abortSignal: signal },
        );
        done[part.partNumber - 1] = { PartNumber: part.partNumber, ETag: out.ETag };
        job.onPartStored?.(part.body.byteLength);
      } catch (error) {
        fail(await job.classify(error, 'UploadPart'));
        return;
      }
    }
  };
  const fail = (error: unknown): void => {
    if (failure !== undefined) return;
    failure = { error };
    // Parts in flight stop; a stream body is released (destroyed: a read blocked in it ends).
    stop.abort();
    job.release();
    job.parts.return?.().catch(noop);
  };

  if (job.signal.aborted) fail(job.signal.reason);
  const senders: Promise<void>[] = [];
  for (let i = 0; i < job.concurrency; i++) senders.push(sender());
  await Promise.all(senders);
  if (failure === undefined && job.signal.aborted) failure = { error: job.signal.reason };
  let etag: string | undefined;
  if (failure === undefined) {
    try {
      const out = await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: id,
          MultipartUpload: { Parts: done },
        }),
        { abortSignal: job.signal },
      );
      etag = out.ETag ?? '';
    } catch (error) {
      failure = { error: await job.classify(error, 'CompleteMultipartUpload') };
    }
  }
  if (failure !== undefined) {
    await withDeadline(job.upkeep.clock, deadlineMs, (abortSignal) =>
      client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id }), {
        abortSignal,
      }),
    ).then(noop, noop);
    throw failure.error;
  }
  return { etag: etag!, parts: done.length };
}

/**
 * `call` with a signal that aborts after `ms` on `clock` (a `TimeoutError`, as
 * `AbortSignal.timeout` gives), its timer cancelled once the call settled.
 */
async function withDeadline<R>(
  clock: Clock,
  ms: number,
  call: (signal: AbortSignal) => Promise<R>,
): Promise<R> {
  const controller = new AbortController();
  const cancel = clock.setTimer(
    () =>
      controller.abort(
        new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      ),
    ms,
    true,
  );
  try {
    return await call(controller.signal);
  } finally {
    cancel();
  }
}

function noop(): void {}
