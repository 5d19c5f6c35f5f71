/**
 * An adaptive limit against a real `node:http` shard that serves at most K requests at once
 * (a semaphore; the rest wait in FIFO order inside the server, as a worker pool's queue does) in
 * about 20 ms each. Nothing but latency tells the client about K: the connection pool allows 32,
 * and the limit must find K from the queueing it sees — with `gradient()`'s default options
 * (issue #17; the old defaults settled at 1.5 × K + 4 = 10 and needed tuning).
 *
 * Where the limit settles depends on the latencies the client measures, so on how busy the
 * machine is: that figure is asserted on the simulator's virtual time (test/limits/settle.test.ts:
 * K = 4, 10 and 40 within ±30 %) and measured on real sockets by `npm run bench`
 * (bench/adaptive.bench.ts). Here, what holds however busy the machine: every request is
 * answered, the balancer never has more calls out than its limit of the moment, and the limit
 * adapts (it moves, and stays within its bounds).
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

  it('adapts: every request answered, never more out than the limit, the limit moving within its bounds', async () => {
    const shard = semaphore();
    server = await startServer(shard.handler);
    const http = createHttpBalancer({
      origins: [server.origin],
      connectionsPerShard: CONCURRENCY,
      warm: 4,
      maxInFlightPerShard: gradient({ max: 64 }),
    });
    await http.warm();
    const limits = [http.stats().shards[0]!.limit];
    http.on('limit', ({ limit }) => limits.push(limit));
    let over = 0;
    http.on('pick', ({ shard: view }) => {
      // The view is taken as the attempt starts: its own call is counted in `inFlight`.
      if (view.inFlight > view.limit) over++;
    });
    let answered = 0;
    await runAll(
      REQUESTS,
      CONCURRENCY,
      async () => {
        const res = await http.request({
          path: '/ingest',
          method: 'POST',
          body: 'x',
          idempotent: true,
        });
        if (res.statusCode === 200) answered++;
      },
      60_000,
    );
    console.log(
      `limit: final ${limits.at(-1)}, ${limits.length - 1} changes; server peak ${shard.peak}`,
    );
    expect(answered).toBe(REQUESTS);
    expect(over).toBe(0);
    expect(shard.peak).toBeLessThanOrEqual(K);
    expect(limits.length).toBeGreaterThan(1);
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...limits)).toBeLessThanOrEqual(64);
    expect(http.stats()).toMatchObject({ inFlight: 0, failed: 0 });
    await http.close();
  });
});
