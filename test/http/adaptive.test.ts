/**
 * An adaptive limit against a real `node:http` shard that serves at most K requests at once
 * (a semaphore; the rest wait in FIFO order inside the server, as a worker pool's queue does) in
 * about 20 ms each. Nothing but latency tells the client about K: the connection pool allows 32,
 * and the limit must find K from the queueing it sees — with `gradient()`'s default options
 * (issue #17; the old defaults settled at 1.5 × K + 4 = 10 and needed tuning).
 *
 * Where gradient settles (see GradientLimit): with the limit L ≥ K, requests queue in the server
 * and the RTT is ≈ (L / K) × s, s the service time, against a baseline ≈ s measured below the
 * knee; a window whose RTT stands above `tolerance` × the baseline cuts the limit to L × s / RTT
 * = K. Probes (one call above) and measuring windows (one below) keep it within K ± 1, inside
 * ±30 % of K (2.8–5.2). Measured on a busy machine: final 3–4, mean over the second half 3.9–4.7.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { gradient } from '../../src/limits/index.js';
import { runAll, startServer, type TestServer } from './servers.js';

const K = 4;
const SERVICE_MS = 20;
const REQUESTS = 1_500;
const CONCURRENCY = 32;

/** Serves at most K at once; the rest wait in FIFO order. Tracks the most it ever served at once. */
function semaphore() {
  let busy = 0;
  let peak = 0;
  const waiting: Array<() => void> = [];
  const serve = (res: ServerResponse) => {
    busy++;
    if (busy > peak) peak = busy;
    setTimeout(() => {
      res.end('ok');
      busy--;
      waiting.shift()?.();
    }, SERVICE_MS);
  };
  return {
    handler: (_req: IncomingMessage, res: ServerResponse) => {
      if (busy < K) serve(res);
      else waiting.push(() => serve(res));
    },
    get peak() {
      return peak;
    },
    get waiting() {
      return waiting.length;
    },
  };
}

describe('gradient against a real shard that serves K = 4 at once', () => {
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.close();
  });

  it('converges within ±30 % of K', async () => {
    const shard = semaphore();
    server = await startServer(shard.handler);
    const http = createHttpBalancer({
      origins: [server.origin],
      connectionsPerShard: CONCURRENCY,
      warm: 4,
      maxInFlightPerShard: gradient({ max: 64 }),
    });
    await http.warm();
    // The limit over the run, as the `limit` event reports it: [request index, limit].
    const trace: [number, number][] = [[0, http.stats().shards[0]!.limit]];
    let done = 0;
    http.on('limit', ({ limit }) => trace.push([done, limit]));

    await runAll(
      REQUESTS,
      CONCURRENCY,
      async () => {
        await http.request({ path: '/ingest', method: 'POST', body: 'x', idempotent: true });
        done++;
      },
      60_000,
    );

    const final = http.stats().shards[0]!.limit;
    // The mean limit over the second half of the requests, weighted by requests served at it.
    let weighted = 0;
    for (let i = 0; i < trace.length; i++) {
      const from = Math.max(trace[i]![0], REQUESTS / 2);
      const to = i + 1 < trace.length ? trace[i + 1]![0] : REQUESTS;
      if (to > from) weighted += trace[i]![1] * (to - from);
    }
    const meanLimit = weighted / (REQUESTS / 2);
    console.log(
      `limit: final ${final}, mean over the second half ${meanLimit.toFixed(2)}, ${trace.length - 1} changes; server peak ${shard.peak}`,
    );
    expect(shard.peak).toBe(K);
    expect(final).toBeGreaterThanOrEqual(0.7 * K);
    expect(final).toBeLessThanOrEqual(1.3 * K);
    expect(meanLimit).toBeGreaterThanOrEqual(0.7 * K);
    expect(meanLimit).toBeLessThanOrEqual(1.3 * K);
    await http.close();
  });
});
