/**
 * The headers of one HTTP attempt: fixed ones, or a function of the shard and the attempt
 * (a bearer token that expires mid-load is fetched fresh for each attempt), then the body's
 * `content-encoding`, then a `sign` hook that sees the final method, URL, headers and body bytes
 * (request signing that hashes the body) and returns headers to add. Values that came from the
 * function or the hook are secrets: the attempt keeps them for scrubbing a shard's echo, and
 * nothing else holds them.
 */
import { ConfigError } from '../base/errors.js';
import type { ShardState } from '../base/types.js';
import { checkHeaders } from './request-checks.js';
import type { HeadersFn, HttpHeaders, HttpTarget, SignHook, SignRequest } from './types.js';

/** What one attempt sends: its headers and body, and the headers that are secrets whole. */
export interface AttemptHeaders {
  headers: HttpHeaders;
  /** The body to send: the bytes `sign` saw (text turned into bytes once), or as it was. */
  body: Uint8Array | string | null | import('node:stream').Readable;
  /** What the function and the hook returned: every value is a secret. */
  given: HttpHeaders[];
}

/**
 * Where an exchange's headers come from, checked once under `field` (`request`, `http.ingest`).
 *
 * @example
 * const source = headerSource('http.ingest', (shard) => ({ authorization: `Bearer ${tokens.get(shard.id)}` }), undefined);
 */
export class HeaderSource {
  readonly #field: string;
  readonly #headers: HttpHeaders | undefined;
  readonly #fn: HeadersFn | undefined;
  readonly #sign: SignHook | undefined;

  constructor(
    field: string,
    headers: HttpHeaders | undefined,
    fn: HeadersFn | undefined,
    sign: SignHook | undefined,
  ) {
    this.#field = field;
    this.#headers = headers;
    this.#fn = fn;
    this.#sign = sign;
  }

  /**
   * The headers and body of attempt `attempt` on `shard`: the fixed headers, the function's over
   * them, `content-encoding: encoding` when the body is compressed, then `sign`'s headers (a name
   * the function or the hook returns replaces the same name in any case). A function or hook that throws or
   * rejects fails the attempt with its error; what it returns is checked as `headers` are.
   */
  async forAttempt(
    shard: ShardState<HttpTarget>,
    attempt: number,
    method: string,
    path: string,
    body: AttemptHeaders['body'],
    encoding: string | undefined,
  ): Promise<AttemptHeaders> {
    const given: HttpHeaders[] = [];
    let headers: HttpHeaders;
    if (this.#fn === undefined) headers = { ...this.#headers };
    else {
      const made = await this.#fn(shard, attempt);
      checkHeaders(made, `${this.#field}.headers()`);
      given.push(made);
      // The fixed headers (an ingestion's content-type and batch id) under the function's.
      headers = { ...this.#headers };
      replace(headers, made);
    }
    if (encoding !== undefined) withEncoding(headers, encoding, `${this.#field}.headers()`);
    const sign = this.#sign;
    if (sign === undefined) return { headers, body, given };
    // The hook hashes what is sent: text becomes bytes here, and those bytes are sent.
    let bytes: Uint8Array | undefined;
    if (typeof body === 'string') body = bytes = Buffer.from(body);
    else if (body instanceof Uint8Array) bytes = body;
    else if (body === null) bytes = EMPTY;
    const request: SignRequest = {
      method,
      url: `${shard.target.origin}${path}`,
      path,
      headers: { ...headers },
      body: bytes,
      shardId: shard.id,
      attempt,
    };
    const added = await sign(request);
    if (added !== undefined) {
      checkHeaders(added, `${this.#field}.sign()`);
      given.push(added);
      replace(headers, added);
    }
    return { headers, body, given };
  }
}

const EMPTY = new Uint8Array(0);

/**
 * Adds `content-encoding` to `headers` (a copy the caller owns); a `content-encoding` of the
 * caller's own is a `ConfigError` under `field`: the body's encoding is `compression`'s to say.
 */
export function withEncoding(headers: HttpHeaders, encoding: string, field: string): HttpHeaders {
  for (const name of Object.keys(headers)) {
    if (name.toLowerCase() === 'content-encoding' && headers[name] !== undefined) {
      throw new ConfigError(
        `${field}.${name}`,
        'cannot be set on a compressed body: `compression` sets it',
        headers[name],
        { secret: true },
      );
    }
  }
  headers['content-encoding'] = encoding;
  return headers;
}

/** Sets each of `added` on `headers`, replacing a name already there in any letter case. */
function replace(headers: HttpHeaders, added: HttpHeaders): void {
  for (const name of Object.keys(added)) {
    const lower = name.toLowerCase();
    for (const existing of Object.keys(headers)) {
      if (existing !== name && existing.toLowerCase() === lower) delete headers[existing];
    }
    headers[name] = added[name];
  }
}
