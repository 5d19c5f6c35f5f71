import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Balancer, QUEUE_CEILING_FACTOR } from '../../src/core/balancer.js';
import { createHttpBalancer } from '../../src/http/index.js';
import { QueueFullError } from '../../src/index.js';
import { processWarnings } from '../helpers.js';
import { sleep, startServer } from '../http/servers.js';

/**
 * Issue #13's careless producer: it calls `run()` a million times without awaiting `ready()`, or
 * shares one `AbortSignal` among many runs. Memory must stay bounded (a hard ceiling on queued
 * runs, past it `QueueFullError` whatever `overflow` says), a producer that does await `ready()`
 * never sees more than `maxQueued` queued, and one signal costs one listener.
 */

/** Work that does not finish until the test lets it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('a producer that never awaits ready()', () => {
  it.each([
    ['wait', 1_000_000],
    ['reject', 100_000],
  ] as const)(
    'run() called without ready() (overflow: %s, %i calls): at most the ceiling waits, the rest reject with QueueFullError, every run settles',
    async (overflow, TOTAL) => {
      const maxQueued = 100;
      const balancer = new Balancer({
        shards: [
          { id: 'a', target: 0 },
          { id: 'b', target: 1 },
        ],
        maxInFlightPerShard: 4,
        maxQueued,
        overflow,
      });
      const g = gate();
      let resolved = 0;
      let queueFull = 0;
      let other = 0;
      let maxSeenQueued = 0;
      // Each refused run rejects with its own error; their stack traces are not what is counted here,
      // and capturing a million of them triples the test's time on a busy machine.
      const stackTraceLimit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      for (let i = 0; i < TOTAL; i++) {
        balancer
          .run(async () => {
            await g.opened;
          })
          .then(
            () => {
              resolved++;
            },
            (error: unknown) => {
              if (error instanceof QueueFullError) queueFull++;
              else other++;
            },
          );
        if ((i & 0xfff) === 0) maxSeenQueued = Math.max(maxSeenQueued, balancer.stats().queued);
      }
      Error.stackTraceLimit = stackTraceLimit;
      const held = balancer.stats();
      const ceiling = overflow === 'wait' ? QUEUE_CEILING_FACTOR * maxQueued : maxQueued;
      // What the balancer holds is bounded: the running ones and at most the ceiling waiting.
      expect(held.inFlight).toBe(8);
      expect(held.queued).toBe(ceiling);
      expect(maxSeenQueued).toBeLessThanOrEqual(ceiling);
      g.open();
      await balancer.drain();
      expect(resolved).toBe(8 + ceiling);
      expect(queueFull).toBe(TOTAL - 8 - ceiling);
      expect(other).toBe(0);
      const after = balancer.stats();
      expect(after.queued).toBe(0);
      expect(after.inFlight).toBe(0);
      expect(after.completed).toBe(resolved);
      await balancer.close();
    },
  );

  it('the ceiling error says what to do', async () => {
    const balancer = new Balancer({
      shards: [{ id: 'a', target: 0 }],
      maxInFlightPerShard: 1,
      maxQueued: 1,
    });
    const g = gate();
    const runs = Array.from({ length: 12 }, () =>
      balancer.run(() => g.opened).catch((e: unknown) => e),
    );
    const last = await runs[11];
    expect(last).toBeInstanceOf(QueueFullError);
    expect((last as Error).message).toMatch(/ready\(\)/);
    g.open();
    await Promise.all(runs);
    await balancer.close();
  });
});

describe('a producer that awaits ready()', () => {
  it('never sees stats().queued above maxQueued, even while failed attempts are retried', async () => {
    const maxQueued = 10;
    const balancer = new Balancer({
      shards: ['a', 'b', 'c'].map((id, target) => ({ id, target })),
      maxInFlightPerShard: 2,
      maxQueued,
      retry: { attempts: 3, backoff: { baseMs: 0, maxMs: 1 }, budget: false },
    });
    let maxSeen = 0;
    let retries = 0;
    const look = () => {
      maxSeen = Math.max(maxSeen, balancer.stats().queued);
    };
    balancer.on('retry', () => {
      retries++;
      look();
    });
    balancer.on('pick', look);
    const TOTAL = 3_000;
    let settled = 0;
    for (let i = 0; i < TOTAL; i++) {
      await balancer.ready();
      look();
      let attempt = 0;
      void balancer
        .run(
          async () => {
            attempt++;
            await sleep(i % 3);
            // A third of the runs fail their first attempt: their retries re-enter the queue.
            if (attempt === 1 && i % 3 === 0) throw new Error('transient');
          },
          { idempotent: true },
        )
        .finally(() => {
          settled++;
        });
    }
    await balancer.drain();
    expect(settled).toBe(TOTAL);
    expect(retries).toBe(TOTAL / 3);
    expect(balancer.stats().failed).toBe(0);
    expect(maxSeen).toBeLessThanOrEqual(maxQueued);
    // The queue did fill up: ready() was what held the producer back.
    expect(maxSeen).toBe(maxQueued);
    await balancer.close();
  });
});

describe('many runs sharing one AbortSignal', () => {
  const warnings = processWarnings();

  it('20 (and 200) runs on one signal add one listener and print no MaxListenersExceededWarning; an abort settles them all', async () => {
    const balancer = new Balancer({
      shards: [{ id: 'a', target: 0 }],
      maxInFlightPerShard: 5,
    });
    const controller = new AbortController();
    const signal = controller.signal;
    const g = gate();
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      runs.push(balancer.run(() => g.opened, { signal }).catch((e: unknown) => e));
      if (i === 19) expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    }
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    await sleep(10); // warnings are emitted on the next tick
    expect(warnings).not.toContain('MaxListenersExceededWarning');
    controller.abort(new Error('stop'));
    const outcomes = await Promise.all(runs);
    for (const o of outcomes) expect((o as Error).message).toBe('stop');
    // Settled runs leave nothing behind on the signal.
    expect(getEventListeners(signal, 'abort').length).toBe(0);
    g.open();
    await balancer.close();
  });

  it('20 HTTP requests on one signal over real sockets: no warning, one listener at most', async () => {
    const server = await startServer((_req, res) => {
      setTimeout(() => res.end('ok'), 20);
    });
    const http = createHttpBalancer({ origins: [server.origin], connectionsPerShard: 4 });
    const controller = new AbortController();
    const requests = Array.from({ length: 20 }, (_, i) =>
      http.request({ method: 'POST', path: `/${i}`, body: 'x', signal: controller.signal }),
    );
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
    const responses = await Promise.all(requests);
    expect(responses.every((r) => r.statusCode === 200)).toBe(true);
    await sleep(10);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
    await http.close();
    await server.close();
  });
});
