/**
 * What undici accepts of a request's method, path and headers, checked before dispatch: a request
 * undici refuses while building it wedges its `Pool`. Mistakes are `ConfigError`s that never echo
 * a header value or a query string.
 */
import { ConfigError } from '../base/errors.js';
import { isPlainObject } from '../base/validate.js';

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
