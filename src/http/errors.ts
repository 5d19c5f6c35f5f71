/**
 * Errors of the HTTP transport, branded like the core's (`src/base/errors.ts`): a stable `code`, a
 * `name`, and a `Symbol.for('shardwise.error')` brand that `isShardwiseError` recognises from any
 * copy of the package. They never hold request headers (credentials live there), nor the query
 * string of the path.
 */

import { brand, hasCode, isBranded, type ShardwiseErrorGuard } from '../base/errors.js';
import { redactPairs, redactText, scrub } from '../base/redact.js';
import type { ShardwiseErrorClasses } from '../core/error-guard.js';

const BODY_TOO_LARGE = Symbol.for('shardwise.http.bodyTooLarge');

/** Longest response-body excerpt an `HttpError` keeps, in bytes. */
export const EXCERPT_BYTES = 1024;

/** What an `HttpError` is told about the failed exchange. */
export interface HttpErrorDetails {
  statusCode: number;
  shardId: string;
  method: string;
  /** The request path; its query string is dropped before it is stored. */
  path: string;
  /** The response body (only its first {@link EXCERPT_BYTES} bytes are kept). */
  body?: Uint8Array | undefined;
  /** Worth another shard: true for 5xx, false for 4xx. */
  retryable: boolean;
  /** Secret values of the request (credentials, tokens) to scrub from the excerpt. */
  secrets?: readonly string[] | undefined;
}

/** The path without its query string or fragment (tokens travel there). */
export function pathWithoutQuery(path: string): string {
  const q = path.search(/[?#]/);
  return q === -1 ? path : path.slice(0, q);
}

/**
 * A bounded, printable excerpt of a response body, with the request's known secrets scrubbed (a
 * shard may echo the request: a 401 page quoting the Authorization header, the query token, the
 * body), credential-named values redacted, and URLs redacted.
 */
export function excerptOf(body: Uint8Array | undefined, secrets: readonly string[] = []): string {
  if (body === undefined || body.length === 0) return '';
  // Scrubbed before the cut, over enough bytes to hold any secret that starts inside the
  // excerpt: a secret cut in two matches neither itself nor its pieces.
  let longest = 0;
  for (const secret of secrets) longest = Math.max(longest, Buffer.byteLength(secret));
  const text = utf8(body, EXCERPT_BYTES + longest + MAX_PAIR_BYTES);
  // Known secrets first (whole values, then pieces), then anything credential-named the
  // request did not carry (a shard may quote its own tokens), then URLs.
  const clean = redactText(redactPairs(scrub(text, secrets)));
  // A cut through a multi-byte character decodes to U+FFFD: harmless in an excerpt.
  return utf8(Buffer.from(clean), EXCERPT_BYTES);
}

/** Room past the excerpt for a credential-named pair (`"password": "…"`) that straddles it. */
const MAX_PAIR_BYTES = 1024;

function utf8(bytes: Uint8Array, limit: number): string {
  const cut = bytes.length > limit ? bytes.subarray(0, limit) : bytes;
  return Buffer.from(cut.buffer, cut.byteOffset, cut.byteLength).toString('utf8');
}

/**
 * A shard answered with an error status: 4xx (`retryable: false`, the request itself is at fault
 * and another shard would say the same) or 5xx (`retryable: true`, another shard may do better).
 * 429 and 503 with `Retry-After` are not `HttpError`s but `PushBackError`s.
 *
 * @example
 * try { await http.request({ method: 'POST', path: '/ingest', body }); }
 * catch (error) { if (error instanceof HttpError && error.statusCode === 413) split(body); }
 */
export class HttpError extends Error {
  declare readonly code: 'SHARDWISE_HTTP';
  readonly statusCode: number;
  readonly shardId: string;
  readonly method: string;
  /** The request path without its query string. */
  readonly path: string;
  /** The first ≤ 1 KiB of the response body, decoded as UTF-8. */
  readonly excerpt: string;
  /** Read by the retry classifier (`defaultRetryable`). */
  readonly retryable: boolean;

  constructor(details: HttpErrorDetails, message?: string) {
    const path = pathWithoutQuery(details.path);
    const excerpt = excerptOf(details.body, details.secrets);
    super(
      message ??
        `shard "${details.shardId}" answered ${details.method} ${path} with HTTP ${details.statusCode}${
          excerpt === '' ? '' : `: ${oneLine(excerpt)}`
        }`,
    );
    brand(this, 'SHARDWISE_HTTP', 'HttpError');
    this.statusCode = details.statusCode;
    this.shardId = details.shardId;
    this.method = details.method;
    this.path = path;
    this.excerpt = excerpt;
    this.retryable = details.retryable;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasCode(value, 'SHARDWISE_HTTP');
  }
}

/**
 * A response body outgrew `bodyLimitBytes`: the body was destroyed (its connection closed, not
 * reused) and the run fails without retry — the request reached the shard, and another shard
 * would most likely send the same oversized answer.
 */
export class BodyTooLargeError extends HttpError {
  /** The limit that was crossed, bytes. */
  readonly limitBytes: number;

  constructor(details: Omit<HttpErrorDetails, 'retryable' | 'body'>, limitBytes: number) {
    const path = pathWithoutQuery(details.path);
    super(
      { ...details, retryable: false },
      `shard "${details.shardId}" answered ${details.method} ${path} (HTTP ${details.statusCode}) with a body over bodyLimitBytes (${limitBytes}); the body was discarded`,
    );
    Object.defineProperty(this, BODY_TOO_LARGE, { value: true });
    this.name = 'BodyTooLargeError';
    this.limitBytes = limitBytes;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[BODY_TOO_LARGE] === true
    );
  }
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** The class of each code's errors through `shardwise/http`: the core's, and `HttpError`. */
export interface HttpErrorClasses extends ShardwiseErrorClasses {
  SHARDWISE_HTTP: HttpError;
}

/**
 * `isShardwiseError` as `shardwise/http` exports it: the same function as the core's, typed to
 * narrow `SHARDWISE_HTTP` to `HttpError` as well.
 */
export const isShardwiseError = isBranded as ShardwiseErrorGuard<HttpErrorClasses>;
