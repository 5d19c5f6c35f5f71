/**
 * The one redaction module (STYLE rule 17). Every message, error field, event payload and stats
 * value that can carry user input goes through here: URL credentials and query strings are
 * removed, header values are never echoed, known secret values of a request are scrubbed from
 * text that a shard sent back, and a foreign error is reduced to what is safe to keep.
 */

/** A URL authority with no userinfo: a host name, IPv4 or [IPv6] address, and a numeric port. */
const HOST_PORT = /^(?:\[[0-9a-f:.]+\]|[\w.-]+)(?::\d{1,5})?$/i;

/** What a removed secret reads as. */
export const REDACTED = '[redacted]';

/** Header names whose values are credentials (and any name containing one of these words). */
const SENSITIVE_HEADER =
  /^(authorization|proxy-authorization|cookie|set-cookie)$|token|secret|key|auth|session|password|credential|signature/i;

/** Pieces of a secret value shorter than this are not scrubbed on their own (too common). */
const MIN_PIECE = 6;

/**
 * A name whose value is a credential, inside a text: `password`, `api_key`, `x-amz-security-token`,
 * `Authorization`, `set-cookie` … (not a bare `key`: an S3 object key is not a secret).
 */
const NAME = String.raw`(?:[\w.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|credentials?|signature|cookie|session(?:[_-]?id)?)|(?:[\w-]*-)?auth(?:orization|entication)?)`;

/**
 * Credential-named pairs in a text, each with the index of its value's group (the groups before
 * it are kept): JSON (`"password": "…"`, also escaped inside a JSON string), forms and queries
 * (`token=…`), header-like lines (`Authorization: …`), and auth schemes (`Bearer …`).
 */
const PAIRS: readonly { pattern: RegExp; value: number }[] = [
  { pattern: new RegExp(String.raw`("${NAME}"\s*:\s*")((?:[^"\\]|\\.)*)`, 'gi'), value: 2 },
  // A bare JSON value (`"password": 73519264`), not a literal (`null`, `true`, `false`).
  {
    pattern: new RegExp(String.raw`("${NAME}"\s*:\s*)(?!(?:null|true|false)\b)(-?[\w.+-]+)`, 'gi'),
    value: 2,
  },
  {
    pattern: new RegExp(String.raw`(\\"${NAME}\\"\s*:\s*\\")((?:[^"\\]|\\[^"])*)`, 'gi'),
    value: 2,
  },
  {
    pattern: new RegExp(String.raw`(^|[\s?&;,{("'])(${NAME}\s*=\s*)([^&;,\s"'<>)}]+)`, 'gim'),
    value: 3,
  },
  { pattern: new RegExp(String.raw`(^|[\s{,"'])(${NAME}\s*:[ \t]*)([^\r\n"]+)`, 'gim'), value: 3 },
  { pattern: /\b((?:Bearer|Basic|Digest|Token)\s+)([^\s"',;]{6,})/g, value: 2 },
];

/** A credential value shorter than this is not scrubbed from other text (it would maim it). */
const MIN_SECRET = 4;
/**
 * Longest body whose secrets are looked for, bytes: past `http.ingest`'s largest batches (an error
 * path, but a bounded one).
 */
const MAX_BODY_SCAN = 16 * 1024 * 1024;
/** Longest body scrubbed whole (and by its longer pieces) when a shard echoes it. */
const MAX_BODY_WHOLE = 4 * 1024;

/**
 * Removes URL credentials (`user:password@`) and query strings / fragments from any URL-like
 * token of `text` (`scheme://…`, a path starting with `/`, or any token with a `?name=value`
 * glued to it), and credentials before an `@` in a bare `user:password@host`.
 *
 * @example
 * redactText('http://u:p@10.0.0.1:99999/x?token=abc'); // 'http://10.0.0.1:99999/x?[redacted]'
 * redactText('h:1x?token=abc'); // 'h:1x?[redacted]'
 */
export function redactText(text: string): string {
  return (
    text
      // `scheme://user:password@` or `//user:password@` (a password may hold an `@`: up to the
      // last one of the authority).
      .replace(/((?:[a-z][a-z0-9+.-]*:)?\/\/)[^/\s?#"'<>]*@/gi, '$1')
      // A bare `user:password@host`, wherever a token starts.
      .replace(/(^|[\s"'(<,=])[^\s/@:"'<>(),=]+:[^\s/"'<>]*@/g, '$1')
      .replace(
        /((?:[a-z][a-z0-9+.-]*:\/\/|(?<![\w.])\/)[^\s?#"'<>]*)[?#][^\s"'<>]*/gi,
        `$1?${REDACTED}`,
      )
      // A query on anything else (`host:80?token=…`, `ingest?key=…`): a `?` glued to a token and
      // followed by `name=value`.
      .replace(/([^\s?#"'<>])\?[^\s"'<>?]*=[^\s"'<>]*/g, `$1?${REDACTED}`)
  );
}

/**
 * {@link redactText} for a value given whole (an option, an argument), where there is no free text
 * to keep: everything before the last `@` of a URL's authority or of a `user:password@host` goes
 * (a password may hold `/`, `?`, `#`, a space or a quote), and everything from the first `?` or
 * `#` on (a query may hold a space).
 *
 * @example
 * redactValue('http://u:pa/ss@h:80/x?token=a b'); // 'http://h:80/x?[redacted]'
 */
export function redactValue(value: string): string {
  let out = value;
  const at = out.lastIndexOf('@');
  if (at >= 0) {
    const scheme = /^\s*(?:[a-z][a-z0-9+.-]*:)?\/\//i.exec(out);
    if (scheme !== null) {
      const before = out.slice(scheme[0].length, at);
      const cut = before.search(/[/?#\s]/);
      if (cut < 0) out = out.slice(0, scheme[0].length) + out.slice(at + 1);
      // Past a `/`, `?` or `#`: after a well-formed `host[:port]` the `@` is a path's or a
      // query's; otherwise what comes first is no host, and may be a password holding a `/`.
      else if (!HOST_PORT.test(before.slice(0, cut))) {
        out = `${out.slice(0, scheme[0].length)}${REDACTED}@${out.slice(at + 1)}`;
      }
    } else if (out.slice(0, at).includes(':')) out = out.slice(at + 1);
  }
  const query = out.search(/[?#]/);
  if (query >= 0) out = `${out.slice(0, query)}?${REDACTED}`;
  return redactText(out);
}

/**
 * Replaces the value of every credential-named pair in `text` (`"password": "…"`, `token=…`,
 * `Authorization: Bearer …`) with {@link REDACTED}, for text a shard sent back (an error page
 * that quotes the request) or an SDK message.
 *
 * @example
 * redactPairs('{"user":"ada","password":"hunter2"}'); // '{"user":"ada","password":"[redacted]"}'
 */
export function redactPairs(text: string): string {
  let out = text;
  for (const { pattern, value } of PAIRS) {
    out = out.replace(pattern, (...m: unknown[]) => `${m.slice(1, value).join('')}${REDACTED}`);
  }
  return out;
}

/** Replaces every occurrence of each secret in `text` with {@link REDACTED}. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret !== '') out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * The secret values a request body carries: the values of its credential-named fields (JSON,
 * form), and — for a short body — the body itself, since a shard that echoes the request may
 * quote it whole: as sent, escaped inside a JSON string (`"request":"{\"id\":7,…}"`) or
 * percent-encoded. Bodies that are not text or bytes give none.
 */
export function bodySecrets(body: unknown): string[] {
  let text: string;
  if (typeof body === 'string') {
    text = body.length > MAX_BODY_SCAN ? body.slice(0, MAX_BODY_SCAN) : body;
  } else if (body instanceof Uint8Array) {
    const cut = body.byteLength > MAX_BODY_SCAN ? body.subarray(0, MAX_BODY_SCAN) : body;
    text = Buffer.from(cut.buffer, cut.byteOffset, cut.byteLength).toString('utf8');
  } else return [];
  const found = pairValues(text);
  if (text.length >= MIN_PIECE && text.length <= MAX_BODY_WHOLE) {
    found.push(text);
    const escaped = JSON.stringify(text).slice(1, -1);
    if (escaped !== text) found.push(escaped);
    const encoded = encodeURIComponent(text);
    if (encoded !== text) found.push(encoded);
  }
  return found;
}

/**
 * The values of the credential-named pairs in `text` (as {@link redactPairs} finds them), raw and
 * percent-decoded; for a value with a `/` (`Credential=AKID/20240101/…`) also what precedes it.
 */
function pairValues(text: string): string[] {
  const found: string[] = [];
  const keep = (value: string): void => {
    if (value.length >= MIN_SECRET) found.push(value);
  };
  for (const { pattern, value } of PAIRS) {
    for (const m of text.matchAll(pattern)) {
      const raw = m[value]?.trim();
      if (raw === undefined) continue;
      keep(raw);
      const slash = raw.indexOf('/');
      if (slash > 0) keep(raw.slice(0, slash));
      try {
        keep(decodeURIComponent(raw));
      } catch {
        // Not percent-encoding: the raw value is kept already.
      }
    }
  }
  return found;
}

/** Fields of an SDK error that name what failed, not a credential (`Key` is the object key). */
const PLAIN_ERROR_FIELDS = new Set(['message', 'name', 'stack', 'Key', 'BucketName', 'Code']);

/**
 * Secret values an SDK error carries about its own request, to scrub from its message: fields
 * whose name is a credential's (`AWSAccessKeyId`, `SignatureProvided`), credential-named pairs in
 * its other text fields (`x-amz-security-token:…` in `CanonicalRequest`, `Credential=…/` in
 * `StringToSign`), and the credential-named headers of its raw response (`$response.headers`),
 * which a proxy may have echoed.
 */
export function errorSecrets(error: unknown): string[] {
  if (typeof error !== 'object' || error === null) return [];
  const found: string[] = [];
  for (const [name, value] of Object.entries(error)) {
    if (typeof value !== 'string' || PLAIN_ERROR_FIELDS.has(name)) continue;
    if (SENSITIVE_HEADER.test(name) && value.length >= MIN_SECRET) found.push(value);
    found.push(...pairValues(value));
  }
  const headers = (error as { $response?: { headers?: unknown } }).$response?.headers;
  if (typeof headers === 'object' && headers !== null) {
    found.push(...requestSecrets(headers as Record<string, unknown>));
  }
  return found;
}

/**
 * The secret values a request carries in its headers (credentials, cookies, API keys, tokens)
 * and its query string: each whole value and its longer pieces (the token of `Bearer <token>`,
 * the value of `s=<value>`), longest first so a whole value is scrubbed before its parts.
 */
export function requestSecrets(
  headers: Readonly<Record<string, unknown>> | undefined,
  path?: string,
  more: readonly string[] = [],
): string[] {
  const found = new Set<string>();
  const add = (value: unknown): void => {
    // Shorter values are too common to scrub from other text (`page=2`, `true`).
    if (typeof value !== 'string' || value.length < MIN_SECRET) return;
    found.add(value);
    for (const piece of value.split(/[\s;,=&/]+/)) if (piece.length >= MIN_PIECE) found.add(piece);
  };
  if (headers !== undefined) {
    for (const name of Object.keys(headers)) {
      if (!SENSITIVE_HEADER.test(name)) continue;
      const value = headers[name];
      if (Array.isArray(value)) value.forEach(add);
      else add(value);
    }
  }
  if (path !== undefined) {
    const q = path.indexOf('?');
    if (q >= 0) {
      for (const pair of path.slice(q + 1).split(/[&#]/)) {
        const value = pair.slice(pair.indexOf('=') + 1);
        add(value);
        try {
          add(decodeURIComponent(value));
        } catch {
          // Not valid percent-encoding: the raw value is scrubbed already.
        }
      }
    }
  }
  more.forEach(add);
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * The secrets of a request plus those of headers a caller's function or signing hook made for one
 * attempt: every value of those is a secret whatever its name (whole; the longer pieces too for
 * a credential's name, as {@link requestSecrets} takes them), longest first.
 */
export function givenHeaderSecrets(
  given: readonly Readonly<Record<string, unknown>>[],
  known: readonly string[],
): string[] {
  const found = new Set<string>(known);
  for (const headers of given) {
    for (const secret of requestSecrets(headers)) found.add(secret);
    for (const name of Object.keys(headers)) {
      const value = headers[name];
      for (const v of Array.isArray(value) ? value : [value]) {
        if (typeof v === 'string' && v.length >= MIN_SECRET) found.add(v);
      }
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * A value safe to keep on an error (`ConfigError.value`): numbers, booleans and the like as they
 * are, strings with URL credentials and queries removed, and anything that may hold secrets
 * inside (objects, arrays, bytes) replaced by a description of its shape.
 */
export function safeValue(value: unknown): unknown {
  if (typeof value === 'string') return redactValue(value);
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value;
  if (typeof value === 'function') return value;
  return `[${shapeOf(value as object)}]`;
}

/** The shape of an object for a message: `an object (Object) with keys a, b`, never its values. */
export function shapeOf(value: object): string {
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (value instanceof Uint8Array) return `a ${value.constructor.name} of length ${value.length}`;
  const kind = Object.prototype.toString.call(value).slice(8, -1);
  const keys = Object.keys(value);
  const shown = keys.slice(0, 8).join(', ');
  return `an object (${kind})${keys.length === 0 ? '' : ` with keys ${shown}${keys.length > 8 ? ', …' : ''}`}`;
}

/** What a foreign error is reduced to: fields that identify it, none that carry a request. */
export interface ErrorSummary {
  name: string;
  message: string;
  code?: string;
  statusCode?: number;
  requestId?: string;
}

/**
 * Reduces an error from another library (an SDK exception with its raw request and response, a
 * socket error) to its name, code, status, request id and message. The message loses `secrets`,
 * the secrets the error itself reveals ({@link errorSecrets}), credential-named values and URL
 * credentials and queries. The result is a plain `Error` holding nothing else, safe as a `cause`.
 *
 * @example
 * reduceError(sdkError).message; // 'Access denied for Authorization: [redacted]'
 */
export function reduceError(error: unknown, secrets: readonly string[] = []): Error {
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const meta = (e.$metadata ?? {}) as Record<string, unknown>;
  const name = typeof e.name === 'string' ? e.name : 'Error';
  const raw =
    error instanceof Error ? error.message : typeof error === 'string' ? error : String(error);
  const known = [...secrets, ...errorSecrets(error)].sort((a, b) => b.length - a.length);
  const reduced = new Error(redactPairs(scrub(redactText(raw), known)));
  reduced.name = name;
  const code =
    typeof e.code === 'string' ? e.code : typeof e.Code === 'string' ? e.Code : undefined;
  const status = typeof meta.httpStatusCode === 'number' ? meta.httpStatusCode : e.statusCode;
  const requestId = typeof meta.requestId === 'string' ? meta.requestId : undefined;
  if (code !== undefined) Object.defineProperty(reduced, 'code', { value: code, enumerable: true });
  if (typeof status === 'number') {
    Object.defineProperty(reduced, 'statusCode', { value: status, enumerable: true });
  }
  if (requestId !== undefined) {
    Object.defineProperty(reduced, 'requestId', { value: requestId, enumerable: true });
  }
  reduced.stack = `${name}: ${reduced.message}`;
  return reduced;
}
