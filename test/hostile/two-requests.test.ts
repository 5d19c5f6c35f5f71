import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TimeoutError } from '../../src/base/errors.js';
import { createHttpBalancer } from '../../src/http/index.js';
import { sleep, startServer, type TestServer } from '../http/servers.js';

/**
 * Issue #13: a second `sendTo()` inside one attempt once replaced the first one's abort listener,
 * so after the run timed out the first request kept a connection busy while the balancer counted
 * nothing in flight. Every request an attempt starts must end with it.
 */

/** Requests the silent shard holds now (each ends when its client goes away). */
let held = 0;

async function eventually(condition: () => boolean, boundMs = 10_000): Promise<boolean> {
  const end = performance.now() + boundMs;
  while (!condition() && performance.now() < end) await sleep(10);
  return condition();
}

describe('several requests in one attempt', () => {
  let silent: TestServer;
  beforeAll(async () => {
    // Reads the request, then never answers.
    silent = await startServer((_req, res) => {
      held++;
      res.on('close', () => held--);
    });
  });
  afterAll(async () => {
    await silent.close();
  });

  it.each([2, 3])(
    '%i sendTo() on one shard, the run times out: every request is aborted, and the pool’s running count matches the balancer’s in-flight (0)',
    async (n) => {
      const http = createHttpBalancer({ origins: [silent.origin], timeoutMs: 500 });
      const started: Promise<unknown>[] = [];
      const error = await http
        .run(
          (shard, ctx) => {
            for (let i = 0; i < n; i++) {
              started.push(
                http
                  .sendTo(shard, { method: 'POST', path: `/part/${i}`, body: String(i) }, ctx)
                  .catch((e: unknown) => e),
              );
            }
            // Awaits only the first: the others are left running, as careless code does.
            return started[0]!;
          },
          { idempotent: false },
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      // The first request was aborted by the timeout and its rejection became the run's value…
      const outcomes = await Promise.all(started);
      expect(error ?? outcomes[0]).toBeDefined();
      // …and every request the attempt started was aborted, not only the awaited one.
      for (const outcome of outcomes) expect((outcome as Error).name).toMatch(/Abort|Timeout/);
      expect(await eventually(() => held === 0)).toBe(true);
      expect(await eventually(() => http.stats().shards[0]!.running === 0)).toBe(true);
      expect(await eventually(() => http.stats().shards[0]!.pending === 0)).toBe(true);
      expect(http.stats().inFlight).toBe(0);
      expect(http.stats().shards[0]!.inFlight).toBe(0);
      await http.close();
    },
  );

  it('a run that resolves with one request still running stops that request too', async () => {
    const fast = await startServer((_req, res) => res.end('ok'));
    const http = createHttpBalancer({ origins: [fast.origin, silent.origin], timeoutMs: 5_000 });
    const [fastShard, silentShard] = http.shards;
    let stray: Promise<unknown> | undefined;
    const res = await http.run((_shard, ctx) => {
      // A second, forgotten request to the silent shard; the run's answer comes from the fast one.
      stray = http
        .sendTo(silentShard!, { method: 'POST', path: '/stray', body: 'x' }, ctx)
        .catch((e: unknown) => e);
      return http.sendTo(fastShard!, { method: 'POST', path: '/ok', body: 'x' }, ctx);
    });
    expect(res.statusCode).toBe(200);
    const strayOutcome = await stray;
    expect((strayOutcome as Error).name).toBe('AbortError');
    expect(await eventually(() => held === 0)).toBe(true);
    expect(await eventually(() => http.stats().shards[1]!.running === 0)).toBe(true);
    expect(http.stats().inFlight).toBe(0);
    await http.close();
    await fast.close();
  });

  it('the timeout is the run’s error when the awaited request is the one cut', async () => {
    const http = createHttpBalancer({ origins: [silent.origin], timeoutMs: 300 });
    const error = await http
      .run((shard, ctx) => {
        void http.sendTo(shard, { method: 'POST', path: '/a', body: 'a' }, ctx).catch(() => {});
        return http.sendTo(shard, { method: 'POST', path: '/b', body: 'b' }, ctx);
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(await eventually(() => held === 0)).toBe(true);
    expect(await eventually(() => http.stats().shards[0]!.running === 0)).toBe(true);
    await http.close();
  });
});
