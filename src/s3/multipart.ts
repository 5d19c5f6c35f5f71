import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Part } from './body.js';

/** One multipart upload on one target. */
export interface MultipartJob {
  client: S3Client;
  bucket: string;
  key: string;
  contentType: string | undefined;
  metadata: Record<string, string> | undefined;
  /** The parts, numbered from 1, in order. Pulled by up to `concurrency` senders at once. */
  parts: AsyncIterator<Part>;
  concurrency: number;
  /** The attempt's signal: aborts every part in flight. */
  signal: AbortSignal;
  /** Maps an error of `operation` to what the balancer should see (the S3 classifier). */
  classify: (error: unknown, operation: string) => unknown;
  /** Receives the `AbortMultipartUpload` of a failed upload, so `close()` can wait for it. */
  cleanup: (done: Promise<void>) => void;
}

/**
 * CreateMultipartUpload, UploadPart × n (up to `concurrency` at once), CompleteMultipartUpload.
 * On any failure the upload is aborted (AbortMultipartUpload, without the attempt's signal, so
 * it runs even after a timeout) and the first error is thrown: S3 would otherwise keep the parts,
 * and bill for them, until a lifecycle rule removes them.
 */
export async function multipartUpload(job: MultipartJob): Promise<{ etag: string; parts: number }> {
  const { client, bucket, key } = job;
  let uploadId: string | undefined;
  try {
    const created = await client.send(
      new CreateMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        ContentType: job.contentType,
        Metadata: job.metadata,
      }),
      { abortSignal: job.signal },
    );
    uploadId = created.UploadId;
  } catch (error) {
    throw job.classify(error, 'CreateMultipartUpload');
  }
  if (uploadId === undefined) {
    throw job.classify(
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
        next = await job.parts.next();
      } catch (error) {
        // The body itself failed (a stream error, too many parts): not the target's doing.
        fail(error);
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
      } catch (error) {
        fail(job.classify(error, 'UploadPart'));
        return;
      }
    }
  };
  const fail = (error: unknown): void => {
    if (failure !== undefined) return;
    failure = { error };
    // Parts in flight stop; a stream body is released (its iterator destroys it).
    stop.abort();
    job.parts.return?.().catch(noop);
  };

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
      failure = { error: job.classify(error, 'CompleteMultipartUpload') };
    }
  }
  if (failure !== undefined) {
    const aborting = client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id }))
      .then(noop, noop);
    job.cleanup(aborting);
    await aborting;
    throw failure.error;
  }
  return { etag: etag!, parts: done.length };
}

function noop(): void {}
