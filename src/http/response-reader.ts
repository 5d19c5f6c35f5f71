/**
 * One HTTP request of an attempt, as an undici dispatch handler that reads the response in full.
 *
 * Why not `pool.request()`: undici's request API builds, per request, an `AsyncResource`, a
 * `Readable` for the response body (then read through `'data'` events, or `arrayBuffer()`), a
 * promise, and an abort listener on an emitter or a signal. Profiling the transport (see
 * docs/performance.md) put those layers at roughly half of the client's CPU above undici's
 * `dispatch`. This handler is all of them in one object: the response's chunks are kept as
 * undici hands them over, the attempt's abort goes straight to undici's `abort`, and the status
 * is judged once the body is complete.
 *
 * It keeps the request API's guarantees: a body past `bodyLimitBytes` (declared, or counted as it
 * arrives) aborts the request, which destroys its connection instead of reading the rest — but
 * an error status still means what it says (a 502 with a big page is a 502, a 429 push-back),
 * judged on the first bytes its excerpt needs, which are all it keeps of an error body; an
 * abort before the request reached a connection is applied as soon as it does; every listener
 * is removed when the request is over.
 */
import type { Dispatcher } from 'undici';
import undiciUtil from 'undici/lib/core/util.js';
import type { RunContext } from '../admission/run.js';
import { givenHeaderSecrets } from '../base/redact.js';
import type { ShardState } from '../base/types.js';
import { streamConsumed } from '../transport/body.js';
import { annotateTransportError, type ExchangeInfo, statusError } from './classify.js';
import { BodyTooLargeError, EXCERPT_BYTES } from './errors.js';
import type { Exchange } from './exchange.js';
import { feedLoadMetrics, LOAD_METRICS_HEADER, parseLoadMetrics } from './load-metrics.js';
import { feedReportedLoad, parseLoadHeader } from './reported-load.js';
import { Response } from './response.js';
import type { HttpHeaders, HttpResponse, HttpTarget } from './types.js';

type Headers = Record<string, string | string[] | undefined>;

/** What is kept of an error body: its excerpt, with room for a secret the excerpt cut would split. */
const ERROR_KEEP_BYTES = EXCERPT_BYTES + 64 * 1024;

/** undici's own header parser, so headers read exactly as its request API gives them. */
const { parseHeaders } = undiciUtil;

/** What every request of one balancer reads its response with (built once). */
export interface ReadSettings {
  /** Largest response body kept, bytes. */
  bodyLimitBytes: number;
  /** The load header's lower-cased name, or undefined when off. */
  loadHeader: string | undefined;
  /** Status classification settings (the request's own fields are added on an error). */
  info: Omit<ExchangeInfo, 'shardId' | 'method' | 'path' | 'secrets'>;
}

/**
 * Sends `body` on `pool` for `exchange` and resolves with the whole response (status < 400), or
 * rejects with what the status or the transport means. `ctx`'s abort aborts the request; the
 * body bytes written and received are reported to it. `given`: headers a function or a signing
 * hook made for this attempt (secrets, scrubbed from an echo as the request's own are).
 */
export function sendExchange(
  pool: Dispatcher,
  settings: ReadSettings,
  shard: ShardState<HttpTarget>,
  exchange: Exchange,
  options: Dispatcher.DispatchOptions,
  ctx: RunContext,
  given: HttpHeaders[] | undefined,
): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const reader = new ResponseReader(settings, shard, exchange, resolve, reject, given);
    // An attempt already over (it ended while its headers were made) sends nothing.
    if (reader.listen(ctx)) pool.dispatch(options, reader);
  });
}

/**
 * undici's (v7) own handler interface — `onConnect`, `onHeaders`, `onData`, `onComplete`,
 * `onError` — which its core calls directly; the newer `onRequestStart` family is adapted to it
 * through a wrapper object per request.
 */
class ResponseReader implements Dispatcher.DispatchHandler {
  readonly #settings: ReadSettings;
  readonly #shard: ShardState<HttpTarget>;
  readonly #exchange: Exchange;
  readonly #resolve: (response: HttpResponse) => void;
  readonly #reject: (error: unknown) => void;
  /** undici's abort for this request, once it has a connection. */
  #abort: ((reason?: Error) => void) | undefined = undefined;
  /** Why the request was aborted before it had a connection (applied when it gets one). */
  #reason: unknown = undefined;
  #unlisten: (() => void) | undefined = undefined;
  #settled = false;
  #statusCode = 0;
  #headers: Headers | undefined = undefined;
  /** The body's chunks: the first in a field (one chunk is the common case), the rest in a list. */
  #first: Buffer | undefined = undefined;
  #more: Buffer[] | undefined = undefined;
  #size = 0;
  readonly #given: HttpHeaders[] | undefined;
  /** Where the body bytes are reported (a context of the caller's own may not report). */
  #ctx: RunContext | undefined = undefined;
  /** Request body bytes written to the connection; −1 once reported. */
  #sent = 0;

  constructor(
    settings: ReadSettings,
    shard: ShardState<HttpTarget>,
    exchange: Exchange,
    resolve: (response: HttpResponse) => void,
    reject: (error: unknown) => void,
    given: HttpHeaders[] | undefined,
  ) {
    this.#settings = settings;
    this.#shard = shard;
    this.#exchange = exchange;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#given = given;
  }

  /** Aborts this request when the attempt is over before it is; false if it is over already. */
  listen(ctx: RunContext): boolean {
    if (typeof ctx.reportSent === 'function') this.#ctx = ctx;
    this.#unlisten = ctx.onAbort((reason) => this.#cancel(reason));
    return !this.#settled;
  }

  /** A piece of the request body went to the connection (undici passes the chunk itself). */
  onBodySent(chunk: unknown): void {
    this.#sent +=
      typeof chunk === 'number'
        ? chunk
        : typeof chunk === 'string'
          ? Buffer.byteLength(chunk)
          : (chunk as Uint8Array).byteLength;
  }

  onRequestSent(): void {
    this.#reportSent();
  }

  /** Reports the body bytes written (once), and what they were before compression. */
  #reportSent(): void {
    const wire = this.#sent;
    if (wire <= 0 || this.#ctx === undefined) return;
    this.#sent = -1;
    const compressed = this.#exchange.body.compressed;
    const encoding = compressed?.encoding;
    this.#ctx.reportSent(encoding === undefined ? wire : compressed!.rawBytes, wire, encoding);
  }

  /** Reports the response body bytes received (once, when the request is over). */
  #reportReceived(): void {
    const ctx = this.#ctx;
    if (ctx === undefined) return;
    this.#ctx = undefined;
    if (this.#size === 0) return;
    const encoding = this.#headers?.['content-encoding'];
    ctx.reportReceived(this.#size, typeof encoding === 'string' ? encoding : undefined);
  }

  /** The request is over, however it ended: its bytes are reported. */
  #over(): void {
    this.#reportSent();
    this.#reportReceived();
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.#settled) {
      abort(this.#reason as Error);
      return;
    }
    this.#abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    // 1xx (103 Early Hints …): the final response follows.
    if (statusCode < 200) return true;
    const headers = parseHeaders(rawHeaders) as Headers;
    this.#statusCode = statusCode;
    this.#headers = headers;
    // A HEAD answer declares the length of a body it does not send; an error's length is judged
    // as it comes (its status is its meaning, its body only an excerpt).
    if (
      statusCode < 400 &&
      Number(headers['content-length']) > this.#settings.bodyLimitBytes &&
      this.#exchange.method !== 'HEAD'
    ) {
      this.#tooLarge();
      return false;
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    const size = this.#size + chunk.length;
    this.#size = size;
    if (this.#statusCode >= 400) return this.#errorData(chunk, size);
    if (size > this.#settings.bodyLimitBytes) {
      this.#tooLarge();
      return false;
    }
    if (this.#first === undefined) this.#first = chunk;
    else if (this.#more === undefined) this.#more = [chunk];
    else this.#more.push(chunk);
    return true;
  }

  onComplete(): void {
    this.#over();
    if (this.#settled) return;
    this.#settled = true;
    this.#unlisten?.();
    const result = this.#outcome();
    if (result instanceof Response) this.#resolve(result);
    else this.#reject(result);
  }

  onError(error: Error): void {
    this.#over();
    if (this.#settled) return;
    this.#settled = true;
    this.#unlisten?.();
    this.#reject(annotateTransportError(error));
  }

  /** The response, or the error its status means; feeds the shard's reported load either way. */
  #outcome(): Response | Error {
    const statusCode = this.#statusCode;
    const headers = this.#headers!;
    const first = this.#first;
    const more = this.#more;
    const body =
      first === undefined
        ? Buffer.alloc(0)
        : more === undefined
          ? first
          : Buffer.concat([first, ...more], this.#statusCode >= 400 ? undefined : this.#size);
    const settings = this.#settings;
    const shard = this.#shard;
    if (settings.loadHeader !== undefined) {
      const load = parseLoadHeader(headers[settings.loadHeader]);
      if (load !== undefined) feedReportedLoad(shard, load);
    }
    const orca = headers[LOAD_METRICS_HEADER];
    if (orca !== undefined) {
      const report = parseLoadMetrics(orca);
      if (report !== undefined) feedLoadMetrics(shard, report);
    }
    if (statusCode < 400) return new Response(statusCode, headers, body, shard.id);
    const ex = this.#exchange;
    return statusError(statusCode, headers, body, {
      ...settings.info,
      shardId: shard.id,
      method: ex.method,
      path: ex.path,
      secrets: this.#given === undefined ? ex.secrets : givenHeaderSecrets(this.#given, ex.secrets),
      streamSent: streamConsumed(ex.body),
    })!;
  }

  /**
   * A chunk of an error body: kept while the excerpt needs it; past `bodyLimitBytes`, the reading
   * stops (undici closes the connection) and the status is judged on what was kept.
   */
  #errorData(chunk: Buffer, size: number): boolean {
    const before = size - chunk.length;
    if (before < ERROR_KEEP_BYTES) {
      const part = size > ERROR_KEEP_BYTES ? chunk.subarray(0, ERROR_KEEP_BYTES - before) : chunk;
      if (this.#first === undefined) this.#first = part;
      else if (this.#more === undefined) this.#more = [part];
      else this.#more.push(part);
    }
    if (size <= this.#settings.bodyLimitBytes) return true;
    this.onComplete();
    this.#abort?.(
      new BodyTooLargeError(
        {
          statusCode: this.#statusCode,
          shardId: this.#shard.id,
          method: this.#exchange.method,
          path: this.#exchange.path,
        },
        this.#settings.bodyLimitBytes,
      ),
    );
    return false;
  }

  /** The body outgrew the limit: stop reading (undici closes the connection) and fail. */
  #tooLarge(): void {
    const ex = this.#exchange;
    const error = new BodyTooLargeError(
      { statusCode: this.#statusCode, shardId: this.#shard.id, method: ex.method, path: ex.path },
      this.#settings.bodyLimitBytes,
    );
    this.#fail(error);
    this.#abort?.(error);
  }

  /** The attempt is over before the request: abort it now, or as soon as it has a connection. */
  #cancel(reason: unknown): void {
    if (this.#settled) return;
    this.#fail(reason);
    this.#abort?.(reason as Error);
  }

  #fail(error: unknown): void {
    this.#settled = true;
    this.#reason = error;
    this.#unlisten?.();
    this.#reject(error);
  }
}
