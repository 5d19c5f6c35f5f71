/**
 * The abort signal one S3 call is given. On a client whose handler is the SDK's `NodeHttpHandler`
 * (what `createS3Client` builds, and the SDK's default in Node) it follows the attempt through
 * `ctx.onAbort` instead of `ctx.signal`: an `AbortController` and `EventTarget` listeners per call
 * cost 5–10 % of a put's client CPU on Node 20 (bench/s3-put.bench.ts), and most calls never
 * abort. That handler needs only `aborted`, `reason` and `addEventListener`/`removeEventListener`
 * (or `onabort`, its older form), which this provides. Any other handler (a fetch-based one needs
 * a real `AbortSignal`) gets `ctx.signal`.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { RunContext } from '../admission/run.js';

type Listener = (event: { type: 'abort' }) => void;

/** A signal for one SDK call, aborted with the attempt. */
export class CallSignal {
  aborted = false;
  reason: unknown;
  onabort: Listener | null = null;
  #listeners: Listener[] = [];

  addEventListener(type: string, listener: Listener): void {
    if (type === 'abort') this.#listeners.push(listener);
  }

  removeEventListener(type: string, listener: Listener): void {
    if (type !== 'abort') return;
    const i = this.#listeners.indexOf(listener);
    if (i >= 0) this.#listeners.splice(i, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const event = { type: 'abort' as const };
    this.onabort?.(event);
    for (const listener of this.#listeners.splice(0)) listener(event);
  }
}

/** Whether each client's handler takes a {@link CallSignal} (known per client, once). */
const takesCallSignal = new WeakMap<S3Client, boolean>();

function fits(client: S3Client): boolean {
  let known = takesCallSignal.get(client);
  if (known === undefined) {
    // A client-like object of the caller's own (tests, wrappers) may have no config at all.
    const config = (client as { config?: { requestHandler?: unknown } }).config;
    known = config?.requestHandler instanceof NodeHttpHandler;
    takesCallSignal.set(client, known);
  }
  return known;
}

/**
 * Runs `call` on `client` with a signal that aborts when the attempt does (at once if it already
 * has), and stops following the attempt when the call ends.
 */
export async function withCallSignal<R>(
  ctx: RunContext,
  client: S3Client,
  call: (signal: AbortSignal) => Promise<R>,
): Promise<R> {
  if (!fits(client)) return call(ctx.signal);
  const signal = new CallSignal();
  const stop = ctx.onAbort((reason) => signal.abort(reason));
  try {
    return await call(signal as unknown as AbortSignal);
  } finally {
    stop();
  }
}
