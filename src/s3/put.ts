/**
 * The S3 transport's one PutObject: every attempt of `putObject()`, and every object of
 * `upload()` and of `s3.ingest` that fits in one part, goes through `putOnce`. The call follows
 * the attempt (a call signal: aborted when the attempt ends), a stream body's own failure is told
 * apart from S3's answer, and S3's errors are classified for the balancer.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { RunContext } from '../admission/run.js';
import { provesNotSent } from '../retry/options.js';
import { type AttemptBody, BodyFailed, bodyFailure, unlessBodyFails } from './body.js';
import { withCallSignal } from './call-signal.js';
import type { S3Target } from './types.js';

/** Maps an error of `operation` on one object to what the balancer should see. */
export type Classify = (error: unknown, operation: string) => Promise<unknown>;

/** One object as one attempt sends it. */
export interface ObjectWrite {
  /** The full key (the target's prefix included). */
  key: string;
  contentType: string | undefined;
  /** The object's `ContentEncoding` (a compressed body), if any. */
  contentEncoding?: string | undefined;
  metadata: Record<string, string> | undefined;
  /**
   * The bytes an ingestion reports to the attempt's transit ledgers (`ctx.reportSent`): the
   * body's length before compression and its encoding. Absent: nothing is reported (a
   * `putObject()` declares its bytes as the run's `bytes`).
   */
  transit?: { rawBytes: number; encoding: string | undefined } | undefined;
}

/** A put's own parts: its body, the length declared for a stream, what lets go of it. */
export interface PutBody {
  body: AttemptBody;
  /** Sent as ContentLength for a stream body (bytes send their own length). */
  contentLength: number | undefined;
  /** Lets go of a body made for this attempt when the put fails (destroys its stream). */
  release?: (() => void) | undefined;
}

/**
 * PutObject of one object on `target`; resolves with its ETag, unquoted. The body's bytes are
 * reported (with `object.transit`) once S3 answered, or once they may have left: a put that
 * provably never left reports nothing.
 */
export async function putOnce(
  target: S3Target,
  ctx: RunContext,
  object: ObjectWrite,
  put: PutBody,
  classify: Classify,
): Promise<string> {
  const { client, bucket } = target;
  const { body } = put;
  const sending = withCallSignal(ctx, client, (abortSignal) =>
    client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: object.key,
        Body: body,
        ContentLength: body instanceof Uint8Array ? body.byteLength : put.contentLength,
        ContentType: object.contentType,
        ContentEncoding: object.contentEncoding,
        Metadata: object.metadata,
      }),
      { abortSignal },
    ),
  );
  let etag: string | undefined;
  try {
    etag = (body instanceof Uint8Array ? await sending : await unlessBodyFails(body, sending)).ETag;
  } catch (error) {
    // A stream made for this attempt (by a body function) is let go; a one-shot stream is kept,
    // as an attempt that proves nothing was sent may hand it to another target.
    put.release?.();
    if (error instanceof BodyFailed) throw bodyFailure(error.cause);
    const failure = await classify(error, 'PutObject');
    const answered =
      typeof failure === 'object' &&
      failure !== null &&
      typeof (failure as { statusCode?: unknown }).statusCode === 'number';
    if (answered || !provesNotSent(failure)) reportSent(ctx, object, body);
    throw failure;
  }
  reportSent(ctx, object, body);
  return unquote(etag);
}

function reportSent(ctx: RunContext, object: ObjectWrite, body: AttemptBody): void {
  const transit = object.transit;
  if (transit === undefined || !(body instanceof Uint8Array)) return;
  ctx.reportSent(transit.rawBytes, body.byteLength, transit.encoding);
}

/** An ETag without the quotes S3 puts around it. */
export function unquote(etag: string | undefined): string {
  if (etag === undefined) return '';
  return etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
}
