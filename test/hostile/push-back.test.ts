import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ShardUnavailableError } from '../../src/base/errors.js';
import type { Picker } from '../../src/base/types.js';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import {
  consistentHash,
  PushBackError,
  p2c,
  peakEwma,
  RetriesExhaustedError,
  roundRobin,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer, tick } from '../helpers.js';
import { startServer, type TestServer } from '../http/servers.js';

/**
 * Issue #14's push-back: a shard that says "not now" for a very long (or a nonsensical) time must
 * only hold itself back. A retry on another, idle shard waits only its backoff; the pushed-back
 * shard gets no new attempts while its push-back holds; no wait outlives the run's `timeoutMs`.
 */

/** `Retry-After` values a hostile shard may send, and how long each holds the shard. */
const FAR_FUTURE = new Date(Date.UTC(2999, 0, 1)).toUTCString();
const ADVICE: [string, string, number][] = [
  ['huge', '999999999', 60_000], // capped at maxRetryAfterMs
  ['negative', '-5', 1_000], // malformed: a 429 holds the default second
  ['garbage', 'soon-ish, maybe', 1_000],
  ['a far-future HTTP-date', FAR_FUTURE, 60_000],
];
/** The first retry's backoff ceiling under the default `retry.backoff` (baseMs 50). */
const FIRST_BACKOFF_MS = 50;

describe('push-back on real sockets', () => {
  let advice = '';
  let status = 429;
  let pushing: TestServer;
  let others: TestServer[] = [];
  let http: HttpBalancer | undefined;

  beforeAll(async () => {
    pushing = await startServer((_req, res) => {
      res.statusCode = status;
      res.setHeader('retry-after', advice);
      res.end('slow down');
    });
    others = await Promise.all([0, 1].map(() => startServer((_req, res) => res.end('ok'))));
  });
  afterEach(async () => {
    await http?.close({ drain: false });
    http = undefined;
  });
  afterAll(async () => {
    await Promise.all([pushing, ...others].map((s) => s.close()));
  });

  function origins(): string[] {
    // The pushing shard first: round robin starts there, so the first attempt meets it.
    return [pushing, ...others].map((s) => s.origin);
  }

  it.each(ADVICE)(
    'Retry-After %s: the retry on an idle shard waits only its backoff, within the run’s timeoutMs',
    async (_name, value) => {
      advice = value;
      status = 429;
      http = createHttpBalancer({ origins: origins(), picker: roundRobin(), timeoutMs: 5_000 });
      const delays: number[] = [];
      http.on('retry', ({ delayMs }) => delays.push(delayMs));
      pushing.requests = 0;
      // A POST: a push-back proves the shard did no work, so even a non-idempotent run moves on.
      const res = await http.request({ method: 'POST', path: '/ingest', body: 'x' });
      expect(res.statusCode).toBe(200);
      expect(res.shardId).not.toBe(http.shards[0]!.id);
      expect(pushing.requests).toBe(1);
      expect(delays).toHaveLength(1);
      // Had the push-back been a floor for the retry, the wait would be 1 s or 60 s — longer than
      // the backoff, and for 60 s longer than the run's timeoutMs (the run would have failed).
      expect(delays[0]).toBeLessThan(FIRST_BACKOFF_MS);
    },
  );

  it.each([
    ['huge', '999999999'],
    ['a far-future HTTP-date', FAR_FUTURE],
  ])(
    'a 503 with Retry-After %s is push-back too: the retry waits only its backoff',
    async (_name, value) => {
      advice = value;
      status = 503;
      http = createHttpBalancer({ origins: origins(), picker: roundRobin(), timeoutMs: 5_000 });
      const delays: number[] = [];
      http.on('retry', ({ delayMs }) => delays.push(delayMs));
      const res = await http.request({ method: 'POST', path: '/ingest', body: 'x' });
      expect(res.statusCode).toBe(200);
      expect(delays).toHaveLength(1);
      expect(delays[0]).toBeLessThan(FIRST_BACKOFF_MS);
    },
  );

  const holdPickers: [string, () => Picker][] = [
    // A picker blind to load: push-back must make the shard unavailable, not only expensive.
    ['roundRobin', () => roundRobin()],
    ['p2c', () => p2c()],
    // On a manual clock every latency is 0 ms: an unmeasured shard must not cost more than that.
    ['peakEwma', () => peakEwma({ defaultRttMs: 0 })],
  ];
  describe.each(holdPickers)('%s', (_pickerName, makePicker) => {
    it.each(ADVICE)(
      'Retry-After %s: the shard gets no new attempt while its push-back holds',
      async (_name, value, holdMs) => {
        advice = value;
        status = 429;
        // Time stands still on a manual clock: the push-back holds until the test moves it on.
        const clock = new ManualClock();
        http = createHttpBalancer({
          origins: origins(),
          picker: makePicker(),
          clock,
          random: seededRandom(3),
          // No backoff, so a retry needs no timer while time stands still.
          retry: { backoff: { baseMs: 0, maxMs: 0 } },
        });
        const h = http;
        pushing.requests = 0;
        const send = () => h.request({ method: 'POST', path: '/ingest', body: 'x' });
        // Until it pushes back the shard is an equal: send until the picker meets it.
        for (let i = 0; i < 50 && pushing.requests === 0; i++) await send();
        expect(pushing.requests).toBe(1);
        // Two other shards are free all along: the pushed-back one is not needed.
        for (let i = 0; i < 30; i++) expect((await send()).shardId).not.toBe(h.shards[0]!.id);
        expect(pushing.requests).toBe(1);
        clock.advance(holdMs - 1);
        for (let i = 0; i < 10; i++) await send();
        expect(pushing.requests).toBe(1);
        // Past the hold the shard is offered again (and pushes back again).
        clock.advance(1);
        for (let i = 0; i < 30 && pushing.requests === 1; i++) await send();
        expect(pushing.requests).toBe(2);
      },
    );
  });
});

describe('no wait outlives the run’s timeoutMs (virtual time)', () => {
  function pushBackShards(n: number) {
    return Array.from({ length: n }, (_, i) => ({ id: `s${i}`, target: i }));
  }

  it('when every shard pushes back past the delivery deadline, the run settles at once instead of waiting', async () => {
    const { clock, balancer } = makeBalancer({
      shards: pushBackShards(3),
      picker: roundRobin(),
      deliveryTimeoutMs: 5_000,
      retry: { attempts: 5 },
    });
    let calls = 0;
    let settled: unknown;
    void balancer
      .run(
        async () => {
          calls++;
          throw new PushBackError(60_000);
        },
        { idempotent: true },
      )
      .catch((error) => {
        settled = error;
      });
    // Three pushes back, then the retry would wait 60 s > 5 s: it is refused, with no time passing.
    await tick(clock, 0);
    for (let i = 0; i < 5 && settled === undefined; i++) await tick(clock, 50);
    expect(settled).toBeInstanceOf(RetriesExhaustedError);
    expect(String((settled as Error).message)).toMatch(/past its delivery deadline/);
    expect(calls).toBe(3);
    expect(clock.now()).toBeLessThan(5_000);
    await balancer.close();
  });

  it('a strict keyed run whose home pushes back past its delivery deadline settles at once; one arriving later waits in line to its deadline', async () => {
    const { clock, balancer } = makeBalancer({
      shards: pushBackShards(3),
      picker: consistentHash(),
      random: seededRandom(2),
      deliveryTimeoutMs: 5_000,
    });
    const events: string[] = [];
    balancer.on('failure', (e) => events.push(`failure willRetry=${e.willRetry}`));
    balancer.on('retry', () => events.push('retry'));
    let pushed = false;
    const settledOf = (p: Promise<unknown>) => {
      const box: { value?: unknown } = {};
      p.then(
        (value) => {
          box.value = value;
        },
        (error) => {
          box.value = error;
        },
      );
      return box;
    };
    const first = settledOf(
      balancer.run(
        async () => {
          if (!pushed) {
            pushed = true;
            throw new PushBackError(30 * 24 * 3_600_000); // 30 days
          }
          return 'written';
        },
        { key: 'k', idempotent: true },
      ),
    );
    // Its retry could only wait for the push-back, past its deadline: no retry is announced.
    await tick(clock, 0);
    expect(first.value).toBeInstanceOf(ShardUnavailableError);
    expect((first.value as ShardUnavailableError).waitedMs).toBe(0);
    expect((first.value as ShardUnavailableError).reason).toBe('pushback');
    expect((first.value as Error).message).toMatch(
      /was pushing back for 0 ms, past its delivery deadline \(deliveryTimeoutMs 5000\)/,
    );
    expect(events).toEqual(['failure willRetry=false']);
    // A run for the same key now waits in the home's line, at most to its delivery deadline.
    const second = settledOf(balancer.run(async () => 'written', { key: 'k', idempotent: true }));
    await tick(clock, 4_999);
    expect(second.value).toBeUndefined();
    await tick(clock, 1);
    expect(second.value).toBeInstanceOf(ShardUnavailableError);
    expect((second.value as ShardUnavailableError).waitedMs).toBe(5_000);
    await flush();
    await balancer.close({ drain: false });
  });
});
