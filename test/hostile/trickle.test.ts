import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BalancerClosedError, TimeoutError } from '../../src/base/errors.js';
import { MAX_DURATION_MS } from '../../src/base/validate.js';
import { createHttpBalancer, HTTP_DEFAULTS } from '../../src/http/index.js';
import { createS3Balancer, createS3Client, S3_DEFAULTS } from '../../src/s3/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { sleep, startServer, type TestServer } from '../http/servers.js';
import { clientOptions } from '../s3/server.js';

/**
 * Issue #13's trickling shard: it sends its answer one byte every 500 ms, which keeps
 * `bodyTimeoutMs` (a bound on silence) from ever firing. With defaults, an attempt must still end
 * by a documented bound; the run settles, `drain()` and `close()` return, and
 * `close({ timeoutMs })` aborts what still runs after its deadline.
 */
const BYTE_EVERY_MS = 500;

/** Answers the trickling shard is sending now (each ends when the client goes away). */
let trickling = 0;

/** Headers now, then one byte of a long body every 500 ms until the client goes away. */
function trickle(res: ServerResponse): void {
  trickling++;
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100000' });
  res.write('x');
  const timer = setInterval(() => res.write('x'), BYTE_EVERY_MS);
  res.on('close', () => {
    trickling--;
    clearInterval(timer);
  });
}

/** Polls `condition` until it holds or `boundMs` passes (a bound on a wait, never asserted). */
async function eventually(condition: () => boolean, boundMs = 10_000): Promise<boolean> {
  const end = performance.now() + boundMs;
  while (!condition() && performance.now() < end) await sleep(10);
  return condition();
}

describe('a shard that trickles its answer', () => {
  let slow: TestServer;
  beforeAll(async () => {
    slow = await startServer((_req, res) => trickle(res));
  });
  afterAll(async () => {
    await slow.close();
  });

  it('with an explicit timeoutMs, the attempt ends, the run settles, the socket is released, drain() and close() return', async () => {
    const http = createHttpBalancer({ origins: [slow.origin], timeoutMs: 1_200 });
    // A POST: a timed-out attempt may have reached the shard, so it is not retried.
    const error = await http
      .request({ method: 'POST', path: '/slow', body: 'x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    // The request was aborted: the pool no longer counts it, and the server saw its answer cut
    // (undici closes that connection; it may open a fresh idle one).
    expect(await eventually(() => http.stats().shards[0]!.running === 0)).toBe(true);
    expect(http.stats().inFlight).toBe(0);
    expect(await eventually(() => trickling === 0)).toBe(true);
    await http.drain();
    await http.close();
    expect(http.stats().completed + http.stats().failed).toBe(1);
  });

  it('with defaults, the HTTP attempt ends at HTTP_DEFAULTS.timeoutMs (virtual time over a real socket)', async () => {
    const clock = new ManualClock();
    const http = createHttpBalancer({ origins: [slow.origin], clock });
    let settled: unknown;
    void http.request({ method: 'POST', path: '/slow', body: 'x' }).catch((e: unknown) => {
      settled = e;
    });
    // The answer is trickling in: the body is read, the attempt is running.
    expect(await eventually(() => http.stats().shards[0]!.running === 1)).toBe(true);
    clock.advance(HTTP_DEFAULTS.timeoutMs - 1);
    await sleep(20);
    expect(settled).toBeUndefined();
    clock.advance(1);
    expect(await eventually(() => settled !== undefined)).toBe(true);
    expect(settled).toBeInstanceOf(TimeoutError);
    expect(await eventually(() => http.stats().shards[0]!.running === 0)).toBe(true);
    await http.drain();
    await http.close();
  });

  it('with defaults, the S3 attempt ends at S3_DEFAULTS.timeoutMs (a real S3 client on a trickling endpoint)', async () => {
    const clock = new ManualClock();
    const client = createS3Client(clientOptions(slow.origin));
    const s3 = createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }], clock });
    const failures: unknown[] = [];
    s3.on('failure', ({ error }) => failures.push(error));
    let settled: unknown;
    void s3.putObject({ key: 'k', body: 'v' }).catch((e: unknown) => {
      settled = e;
    });
    const before = slow.requests;
    expect(await eventually(() => slow.requests > before)).toBe(true);
    clock.advance(S3_DEFAULTS.timeoutMs - 1);
    await sleep(20);
    expect(failures).toHaveLength(0);
    clock.advance(1);
    expect(await eventually(() => failures.length > 0)).toBe(true);
    expect(failures[0]).toBeInstanceOf(TimeoutError);
    // A put is idempotent: its retries trickle too, each ended by the same bound, then it settles.
    for (let i = 0; i < 10 && settled === undefined; i++) {
      await sleep(20);
      clock.advance(S3_DEFAULTS.timeoutMs + 2_000);
      await eventually(() => settled !== undefined, 200);
    }
    expect(settled).toBeDefined();
    expect(failures.every((f) => f instanceof TimeoutError)).toBe(true);
    await s3.drain();
    await s3.close();
    client.destroy();
  });

  it('the default per-attempt bound is finite, within the duration ceiling, and documented', () => {
    for (const ms of [HTTP_DEFAULTS.timeoutMs, S3_DEFAULTS.timeoutMs]) {
      expect(Number.isFinite(ms)).toBe(true);
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(MAX_DURATION_MS);
    }
    const docs = readFileSync(new URL('../../docs/retries-and-health.md', import.meta.url), 'utf8');
    const shown = (ms: number) => ms.toLocaleString('en-US').replace(/,/g, ' ');
    expect(docs).toContain(`${shown(HTTP_DEFAULTS.timeoutMs)}`);
    expect(docs).toMatch(/trickl/);
    expect(docs).toMatch(/close\(\{ timeoutMs/);
  });

  it('close({ timeoutMs }) aborts what still runs after its deadline, and returns', async () => {
    const clock = new ManualClock();
    const http = createHttpBalancer({ origins: [slow.origin], clock });
    const outcomes: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      void http.request({ path: `/slow/${i}` }).then(
        (r) => outcomes.push(r),
        (e: unknown) => outcomes.push(e),
      );
    }
    expect(await eventually(() => http.stats().shards[0]!.running === 3)).toBe(true);
    let closed = false;
    void http.close({ timeoutMs: 1_000 }).then(() => {
      closed = true;
    });
    // Closed to new runs at once; the running ones go on until the deadline.
    await expect(http.request({ path: '/late' })).rejects.toBeInstanceOf(BalancerClosedError);
    clock.advance(999);
    await sleep(20);
    expect(closed).toBe(false);
    expect(outcomes).toHaveLength(0);
    clock.advance(1);
    expect(await eventually(() => closed)).toBe(true);
    expect(outcomes).toHaveLength(3);
    for (const o of outcomes) expect(o).toBeInstanceOf(BalancerClosedError);
    expect(await eventually(() => trickling === 0)).toBe(true);
  });
});
