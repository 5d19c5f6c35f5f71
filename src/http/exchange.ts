/**
 * One HTTP request across its attempts: its checked method, path and headers (fixed, or made per
 * attempt), and its body sorted into a replayable kind. Request-shape mistakes are
 * `ConfigError`s that never echo a header value or a query string.
 */

import type { RunContext } from '../admission/run.js';
import { ConfigError } from '../base/errors.js';
import { bodySecrets, requestSecrets } from '../base/redact.js';
import type { ShardState } from '../base/types.js';
import { checkKnownKeys, checkObject, fn } from '../base/validate.js';
import { type AttemptBody, bodyOfAttempt, type Replayable, replayable } from '../transport/body.js';
import type { Compressed } from '../transport/compression.js';
import { HeaderSource, withEncoding } from './attempt-headers.js';
import { checkHeaders, checkMethod, checkPath } from './request-checks.js';
import type {
  HeadersFn,
  HttpHeaders,
  HttpRequest,
  HttpResponse,
  HttpTarget,
  SignHook,
} from './types.js';

export { checkHeaders, checkMethod, checkPath } from './request-checks.js';

/** Methods that RFC 9110 §9.2.2 calls idempotent (and safe ones): retried by default. */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'PUT',
  'DELETE',
  'OPTIONS',
  'TRACE',
]);

/** One request across its attempts. */
export class Exchange {
  #secrets: string[] | undefined;
  /** What a body factory made for the latest attempt: its secrets are the request's too. */
  #made: string | Uint8Array | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    /** The fixed headers (a compressed body's `content-encoding` included). */
    readonly headers: HttpHeaders | undefined,
    readonly body: Replayable,
    /** Headers made per attempt (a function, a `sign` hook); undefined when they are fixed. */
    readonly source: HeaderSource | undefined,
  ) {}

  /** The `content-encoding` of the body, when it was given (or made) compressed. */
  get encoding(): string | undefined {
    return this.body.compressed?.encoding;
  }

  /** The same request with its body compressed (`request({ compression })`, once). */
  withBody(compressed: Compressed, field: string): Exchange {
    const body = replayable(compressed, field)!;
    const headers =
      this.source !== undefined || compressed.encoding === undefined
        ? this.headers
        : withEncoding({ ...this.headers }, compressed.encoding, field);
    return new Exchange(this.method, this.path, headers, body, this.source);
  }

  /** The body to send on this attempt (the stream only once). */
  attemptBody(): AttemptBody {
    const body = bodyOfAttempt('request.body', this.body, 'request');
    if (
      this.body.factory !== undefined &&
      (typeof body === 'string' || body instanceof Uint8Array)
    ) {
      if (body !== this.#made) this.#secrets = undefined;
      this.#made = body;
    }
    return body;
  }

  /**
   * The request's secret values (credentials in headers, query values, credential-named body
   * fields and a short body itself — the one a body factory made for the latest attempt), for
   * scrubbing echoes. Built on the first error only.
   */
  get secrets(): readonly string[] {
    const { factory, compressed, value } = this.body;
    this.#secrets ??= requestSecrets(
      this.headers,
      this.path,
      // A compressed body's secrets are those of what was compressed (a shard echoes that).
      bodySecrets(
        factory !== undefined ? this.#made : compressed !== undefined ? compressed.source() : value,
      ),
    );
    return this.#secrets;
  }
}

/** Method names as callers usually write them, mapped to the upper-case name sent. */
const COMMON_METHODS: ReadonlyMap<unknown, string> = new Map(
  ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].flatMap((m) => [
    [m, m],
    [m.toLowerCase(), m],
  ]),
);

/** The parts of a request an exchange is made of. */
export type ExchangeParts = Pick<HttpRequest, 'method' | 'path' | 'headers' | 'body' | 'sign'>;

/** Checks the HTTP parts of a request and prepares its body. */
export function exchangeOf(request: ExchangeParts): Exchange {
  const method =
    request.method === undefined
      ? 'GET'
      : (COMMON_METHODS.get(request.method) ?? checkMethod(request.method).toUpperCase());
  const path = request.path === undefined ? '/' : checkPath(request.path);
  const given = request.headers;
  let headers: HttpHeaders | undefined;
  let made: HeadersFn | undefined;
  if (typeof given === 'function') made = given;
  else if (given !== undefined) {
    checkHeaders(given);
    headers = given;
  }
  if (request.sign !== undefined) fn('request.sign', request.sign);
  const body = replayable(request.body, 'request.body');
  if (body === undefined) {
    throw new ConfigError(
      'request.body',
      'must be a string, a Uint8Array, a Readable, an async iterable, a Compressed body, or a function returning one',
      request.body,
    );
  }
  const source =
    made === undefined && request.sign === undefined
      ? undefined
      : new HeaderSource('request', headers, made, request.sign);
  const encoding = body.compressed?.encoding;
  if (source === undefined && encoding !== undefined) {
    headers = withEncoding({ ...headers }, encoding, 'request.headers');
  }
  return new Exchange(method, path, headers, body, source);
}

/**
 * The exchange of one ingestion batch, from parts checked once for the whole ingestion: `headers`
 * fixed (its content-type, the batch's id), under those `made` returns for each attempt, then
 * `sign`'s; the body text, bytes or `Compressed`. `field` names the ingestion (`http.ingest`).
 */
export function batchExchange(
  field: string,
  method: string,
  path: string,
  headers: HttpHeaders,
  made: HeadersFn | undefined,
  sign: SignHook | undefined,
  body: string | Uint8Array | Compressed,
): Exchange {
  const replay = replayable(body, `${field}.body`)!;
  const source =
    made === undefined && sign === undefined
      ? undefined
      : new HeaderSource(field, headers, made, sign);
  const encoding = replay.compressed?.encoding;
  const fixed =
    source === undefined && encoding !== undefined
      ? withEncoding({ ...headers }, encoding, `${field}.headers`)
      : headers;
  return new Exchange(method, path, fixed, replay, source);
}

/**
 * How an HTTP balancer sends an exchange made elsewhere (an ingestion's batch) on a shard it
 * picked: a symbol, not part of its API.
 */
export const SEND_EXCHANGE: unique symbol = Symbol('shardwise.sendExchange');

/** What can send an {@link Exchange}: the HTTP balancer. */
export interface ExchangeSender {
  [SEND_EXCHANGE](
    shard: ShardState<HttpTarget>,
    exchange: Exchange,
    ctx: RunContext,
  ): Promise<HttpResponse>;
}

const EXCHANGE_KEYS: readonly string[] = ['method', 'path', 'headers', 'body', 'sign'];
/** The known names for each list of `extra` names, built once (a constant list is the rule). */
const knownNames = new WeakMap<readonly string[], readonly string[]>();

/**
 * The request's own fields, plus the `extra` names its caller takes; any other name is a
 * mistake (`header:` for `headers:` …).
 */
export function checkRequestShape(request: unknown, extra: readonly string[]): void {
  checkObject('request', request);
  let known = knownNames.get(extra);
  if (known === undefined) {
    known = [...EXCHANGE_KEYS, ...extra];
    knownNames.set(extra, known);
  }
  checkKnownKeys('request', request, known);
}
