import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Picker } from '../../src/base/types.js';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { p2c, peakEwma } from '../../src/pickers/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { runAll, startServer, type TestServer } from '../http/servers.js';
import { recordPicks, show, tally } from './traffic.js';

/**
 * Issue #14's black hole: a shard that fails fast must repel traffic, not attract it. Four real
 * HTTP shards: two fail at once, two answer in ~10 ms. 1,500 POSTs at concurrency 8. A 500 is a
 * 500 however busy the machine is, so the goals are counts of outcomes (failed runs, attempts on
 * the failing shards once learned), not shares of time.
 */
const RUNS = 1_500;
const CONCURRENCY = 8;
/** Attempts the balancer may spend learning which shards fail. */
const LEARN = 300;

const pickers: [string, () => Picker][] = [
  ['peakEwma', () => peakEwma()],
  ['p2c', () => p2c()],
];

describe('shards that fail fast repel traffic (real sockets)', () => {
  /** Two shards answer 500 at once; two answer 200 after ~10 ms. */
  let failing: TestServer[] = [];
  /** Two shards answer 200 "bad" at once (a body the caller rejects); two answer "ok" in ~10 ms. */
  let lying: TestServer[] = [];
  let healthy: TestServer[] = [];

  beforeAll(async () => {
    const slowOk = (_req: unknown, res: { end(body: string): void }) => {
      setTimeout(() => res.end('ok'), 10);
    };
    healthy = await Promise.all([startServer(slowOk), startServer(slowOk)]);
    failing = await Promise.all(
      [0, 1].map(() =>
        startServer((_req, res) => {
          res.statusCode = 500;
          res.end('boom');
        }),
      ),
    );
    lying = await Promise.all([0, 1].map(() => startServer((_req, res) => res.end('bad'))));
  });
  afterAll(async () => {
    await Promise.all([...healthy, ...failing, ...lying].map((s) => s.close()));
  });

  function balancerOver(hostile: TestServer[], picker: Picker, seed: number): HttpBalancer {
    // The hostile shards first: a picker that starts with the first shards meets them at once.
    return createHttpBalancer({
      origins: [...hostile, ...healthy].map((s) => s.origin),
      picker,
      random: seededRandom(seed),
    });
  }

  describe.each(pickers)('%s', (_name, makePicker) => {
    it.each([
      ['non-idempotent', false, 0.1],
      ['idempotent', true, 0.01],
    ] as const)(
      'answering 500: %s runs fail within the goal, and the failing shards lose their traffic',
      async (_label, idempotent, maxFailed) => {
        const http = balancerOver(failing, makePicker(), 14);
        const picks = recordPicks(http);
        let failed = 0;
        await runAll(RUNS, CONCURRENCY, async (i) => {
          try {
            await http.request({
              method: 'POST',
              path: '/ingest',
              body: JSON.stringify({ i }),
              idempotent,
            });
          } catch {
            failed++;
          }
        });
        await http.close();
        const hostile = new Set(failing.map((s) => `http://127.0.0.1:${s.port}`));
        const t = tally(picks, hostile, RUNS, failed, LEARN);
        expect(t.failedRuns, show(t)).toBeLessThanOrEqual(RUNS * maxFailed);
        expect(t.laterHostile, show(t)).toBeLessThanOrEqual(t.laterAttempts * 0.1);
        // Nothing lost: every run settled, and every attempt reached a server.
        expect(http.stats().completed + http.stats().failed).toBe(RUNS);
      },
    );

    it.each([
      ['non-idempotent', false, 0.1],
      ['idempotent', true, 0.01],
    ] as const)(
      'answering 200 with a body the caller rejects: %s runs fail within the goal, and those shards lose their traffic',
      async (_label, idempotent, maxFailed) => {
        const http = balancerOver(lying, makePicker(), 41);
        const picks = recordPicks(http);
        let failed = 0;
        await runAll(RUNS, CONCURRENCY, async (i) => {
          try {
            await http.run(
              async (shard, ctx) => {
                const res = await http.sendTo(
                  shard,
                  { method: 'POST', path: '/ingest', body: JSON.stringify({ i }) },
                  ctx,
                );
                if (res.text() !== 'ok')
                  throw new Error(`shard ${shard.id} answered "${res.text()}"`);
                return res;
              },
              { idempotent },
            );
          } catch {
            failed++;
          }
        });
        await http.close();
        const hostile = new Set(lying.map((s) => `http://127.0.0.1:${s.port}`));
        const t = tally(picks, hostile, RUNS, failed, LEARN);
        expect(t.failedRuns, show(t)).toBeLessThanOrEqual(RUNS * maxFailed);
        expect(t.laterHostile, show(t)).toBeLessThanOrEqual(t.laterAttempts * 0.1);
        expect(http.stats().completed + http.stats().failed).toBe(RUNS);
      },
    );
  });
});
