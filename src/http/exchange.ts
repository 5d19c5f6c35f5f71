/**
 * One HTTP request across its attempts: its checked method, path and headers, and its body
 * sorted into a replayable kind. Request-shape mistakes are `ConfigError`s that never echo a
 * header value or a query string.
 */
import { ConfigError } from '../errors.js';
import { bodySecrets, requestSecrets } from '../redact.js';
import { type AttemptBody, bodyOfAttempt, type Replayable, replayable } from '../transport/body.js';
import { checkKnownKeys, checkObject, isPlainObject } from '../validate.js';
import type { HttpRequest } from './types.js';

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;

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

  constructor(
    readonly method: string,
    readonly path: string,
    readonly headers: Record<string, string | string[] | undefined> | undefined,
    readonly body: Replayable,
  ) {}

  /** The body to send on this attempt (the stream only once). */
  attemptBody(): AttemptBody {
    return bodyOfAttempt('request.body', this.body, 'request');
  }

  /**
   * The request's secret values (credentials in headers, query values, credential-named body
   * fields and a short body itself), for scrubbing echoes. Built on the first error only.
   */
  get secrets(): readonly string[] {
    this.#secrets ??= requestSecrets(this.headers, this.path, bodySecrets(this.body.value));
    return this.#secrets;
  }
}

/** Checks the HTTP parts of a request and prepares its body. */
export function exchangeOf(
  request: Pick<HttpRequest, 'method' | 'path' | 'headers' | 'body'>,
): Exchange {
  const method = request.method === undefined ? 'GET' : checkMethod(request.method).toUpperCase();
  const path = request.path === undefined ? '/' : checkPath(request.path);
  if (request.headers !== undefined) checkHeaders(request.headers);
  const body = replayable(request.body);
  if (body === undefined) {
    throw new ConfigError(
      'request.body',
      'must be a string, a Uint8Array, a Readable, an async iterable, or a function returning one',
      request.body,
    );
  }
  return new Exchange(method, path, request.headers, body);
}

/** The request's own fields; any other name is a mistake (`header:` for `headers:` …). */
export function checkRequestShape(request: unknown, extra: readonly string[]): void {
  checkObject('request', request);
  checkKnownKeys('request', request, ['method', 'path', 'headers', 'body', ...extra]);
}

/**
 * Headers: a plain object of string (or string list) values — not a `Map`, a fetch `Headers` or
 * an array of pairs, whose entries would be sent as nothing. Values are never echoed.
 */
function checkHeaders(headers: unknown): void {
  if (!isPlainObject(headers) || Array.isArray(headers)) {
    throw new ConfigError(
      'request.headers',
      'must be a plain object of header name → value ({ authorization: … })',
      headers,
      { secret: true },
    );
  }
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) {
      throw new ConfigError('request.headers', 'has a name that is not an HTTP token', name, {
        secret: true,
      });
    }
    const ok =
      value === undefined ||
      typeof value === 'string' ||
      (Array.isArray(value) && value.every((v) => typeof v === 'string'));
    if (!ok) {
      throw new ConfigError(
        `request.headers.${name}`,
        'must be a string or an array of strings',
        value,
        {
          secret: true,
        },
      );
    }
  }
}

function checkMethod(value: unknown): string {
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new ConfigError('request.method', 'must be an HTTP method name', value);
  }
  return value;
}

function checkPath(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/')) {
    throw new ConfigError('request.path', 'must be a string starting with "/"', value);
  }
  return value;
}
