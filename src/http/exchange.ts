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
/** Header names already found to be tokens (the same few names come with every request). */
const TOKEN_NAMES = new Set<string>();
const MAX_TOKEN_NAMES = 256;
/**
 * What undici refuses when it builds a request — and a refused request wedges its `Pool` (the
 * connection it was given waits for a 'drain' that never comes; once each has, every later
 * request waits for ever): so they are `ConfigError`s here, before dispatch.
 */
const BAD_PATH = /[^\u0021-\u00ff]/;
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** Headers undici sets itself and refuses from the caller. */
const CLIENT_HEADERS = new Set(['transfer-encoding', 'keep-alive', 'upgrade', 'expect']);
/** Headers undici reads, with the form it accepts (not remembered as plain names). */
const READ_HEADERS = new Map<string, RegExp>([
  ['content-length', /^\d+$/],
  ['host', /^[^,]*$/],
  ['connection', /^\s*[!#$%&'*+.^_`|~0-9a-z-]+\s*(,\s*[!#$%&'*+.^_`|~0-9a-z-]+\s*)*$/i],
]);

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
    readonly headers: Record<string, string | string[] | undefined> | undefined,
    readonly body: Replayable,
  ) {}

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
    this.#secrets ??= requestSecrets(
      this.headers,
      this.path,
      bodySecrets(this.body.factory === undefined ? this.body.value : this.#made),
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

/** Checks the HTTP parts of a request and prepares its body. */
export function exchangeOf(
  request: Pick<HttpRequest, 'method' | 'path' | 'headers' | 'body'>,
): Exchange {
  const method =
    request.method === undefined
      ? 'GET'
      : (COMMON_METHODS.get(request.method) ?? checkMethod(request.method).toUpperCase());
  const path = request.path === undefined ? '/' : checkPath(request.path);
  if (request.headers !== undefined) checkHeaders(request.headers);
  const body = replayable(request.body, 'request.body');
  if (body === undefined) {
    throw new ConfigError(
      'request.body',
      'must be a string, a Uint8Array, a Readable, an async iterable, or a function returning one',
      request.body,
    );
  }
  return new Exchange(method, path, request.headers, body);
}

const EXCHANGE_KEYS: readonly string[] = ['method', 'path', 'headers', 'body'];
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

/**
 * Headers: a plain object of string (or string list) values — not a `Map`, a fetch `Headers` or
 * an array of pairs, whose entries would be sent as nothing. Values are never echoed.
 */
export function checkHeaders(headers: unknown, field = 'request.headers'): void {
  if (!isPlainObject(headers) || Array.isArray(headers)) {
    throw new ConfigError(
      field,
      'must be a plain object of header name → value ({ authorization: … })',
      headers,
      { secret: true },
    );
  }
  // Keys, not entries: no array per header on every request.
  for (const name of Object.keys(headers)) {
    const value = (headers as Record<string, unknown>)[name];
    if (!TOKEN_NAMES.has(name)) checkName(field, name, value);
    const ok =
      value === undefined ||
      (typeof value === 'string'
        ? !BAD_VALUE.test(value)
        : Array.isArray(value) && value.every((v) => typeof v === 'string' && !BAD_VALUE.test(v)));
    if (!ok) {
      throw new ConfigError(
        `${field}.${name}`,
        'must be a string or an array of strings, without control characters (CR, LF, NUL)',
        value,
        { secret: true },
      );
    }
  }
}

/** A header name: a token, not one undici sets itself, with a value undici reads as it must. */
function checkName(field: string, name: string, value: unknown): void {
  if (!TOKEN.test(name)) {
    throw new ConfigError(field, 'has a name that is not an HTTP token', name, { secret: true });
  }
  const lower = name.toLowerCase();
  if (CLIENT_HEADERS.has(lower)) {
    throw new ConfigError(
      `${field}.${name}`,
      'is set by the HTTP client (undici refuses it)',
      value,
      {
        secret: true,
      },
    );
  }
  const form = READ_HEADERS.get(lower);
  if (form === undefined) {
    // A string's validity never changes: remember it (a bounded few, the names in use).
    if (TOKEN_NAMES.size < MAX_TOKEN_NAMES) TOKEN_NAMES.add(name);
  } else if (value !== undefined && (typeof value !== 'string' || !form.test(value))) {
    throw new ConfigError(`${field}.${name}`, 'must be one value undici can read', value, {
      secret: true,
    });
  }
}

export function checkMethod(value: unknown, field = 'request.method'): string {
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new ConfigError(field, 'must be an HTTP method name', value);
  }
  return value;
}

export function checkPath(value: unknown, field = 'request.path'): string {
  if (typeof value !== 'string' || !value.startsWith('/')) {
    throw new ConfigError(field, 'must be a string starting with "/"', value);
  }
  if (BAD_PATH.test(value)) {
    throw new ConfigError(
      field,
      'must be percent-encoded: no spaces, control characters or characters past U+00FF',
      value,
    );
  }
  return value;
}
