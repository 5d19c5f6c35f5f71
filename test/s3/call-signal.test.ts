/**
 * The signal one S3 call is given follows its attempt through `ctx.onAbort`, with no
 * `AbortController` per call: it aborts with the attempt (at once when the attempt already has),
 * calls `onabort` and each listener once, forgets removed listeners, and stops following the
 * attempt when the call ends. A client with another handler (a fetch-based one needs a real
 * `AbortSignal`) gets the attempt's own signal.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { AttemptContext } from '../../src/admission/run.js';
import { CallSignal, withCallSignal } from '../../src/s3/call-signal.js';

/** The SDK's default handler in Node: a NodeHttpHandler. */
const nodeClient = new S3Client({ region: 'us-east-1' });

/** A handler of the caller's own, as a fetch-based one would be. */
class OwnHandler {
  async handle(): Promise<never> {
    throw new Error('not called');
  }
}

describe('withCallSignal', () => {
  it('aborts the call when the attempt aborts, with its reason, each listener once', async () => {
    const ctx = new AttemptContext(1);
    const heard: string[] = [];
    const ended = withCallSignal(ctx, nodeClient, (signal) => {
      const s = signal as unknown as CallSignal;
      s.onabort = () => heard.push('onabort');
      s.addEventListener('abort', () => heard.push('listener'));
      const removed = () => heard.push('removed');
      s.addEventListener('abort', removed);
      s.removeEventListener('abort', removed);
      return new Promise<unknown>((resolve) => {
        s.addEventListener('abort', () => resolve(s.reason));
      });
    });
    const reason = new Error('timed out');
    ctx.abort(reason);
    ctx.abort(new Error('again'));
    await expect(ended).resolves.toBe(reason);
    expect(heard).toEqual(['onabort', 'listener']);
  });

  it('gives an aborted signal when the attempt has already aborted', async () => {
    const ctx = new AttemptContext(1);
    ctx.abort('gone');
    const seen = await withCallSignal(ctx, nodeClient, async (signal) => [
      signal.aborted,
      signal.reason,
    ]);
    expect(seen).toEqual([true, 'gone']);
  });

  it('stops following the attempt once the call has ended, and reads no ctx.signal', async () => {
    const ctx = new AttemptContext(1);
    let signalRead = false;
    const watched = new Proxy(ctx, {
      get(target, property) {
        if (property === 'signal') signalRead = true;
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    let kept: AbortSignal | undefined;
    await withCallSignal(watched, nodeClient, async (signal) => {
      kept = signal;
    });
    ctx.abort('late');
    expect(kept?.aborted).toBe(false);
    expect(signalRead).toBe(false);
  });

  it("gives a client with a handler of its own the attempt's real AbortSignal", async () => {
    const client = new S3Client({ region: 'us-east-1', requestHandler: new OwnHandler() as never });
    const ctx = new AttemptContext(1);
    const given = await withCallSignal(ctx, client, async (signal) => signal);
    expect(given).toBeInstanceOf(AbortSignal);
    expect(given).toBe(ctx.signal);
    const light = await withCallSignal(ctx, nodeClient, async (signal) => signal);
    expect(light).toBeInstanceOf(CallSignal);
  });

  it('gives a client-like object without a config (a wrapper, a test double) the real signal', async () => {
    const ctx = new AttemptContext(1);
    const double = { send: async () => ({}) } as unknown as S3Client;
    const given = await withCallSignal(ctx, double, async (signal) => signal);
    expect(given).toBe(ctx.signal);
  });
});
