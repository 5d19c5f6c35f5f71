import { describe, expect, it } from 'vitest';
import { aimd, ConfigError, gradient, TimeoutError } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { failAfter, flush, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

const make = makeBalancer;

describe('waits and aborts', () => {
  it('abort during backoff settles once with the reason; figures return to 0', async () => {
    const { clock, balancer } = make({
      health: false,
      random: () => 0.99,
      retry: { attempts: 3, backoff: { baseMs: 1000, maxMs: 1000 }, budget: false },
    });
    const ac = new AbortController();
    const run = track(
      balancer.run(() => failAfter(clock, 5, new Error('x')), {
        idempotent: true,
        signal: ac.signal,
        bytes: 7,
      }),
    );
    await tick(clock, 10);
    expect(balancer.stats().retrying).toBe(1);
    const reason = new Error('stop');
    ac.abort(reason);
    await flush();
    expect(run.count).toBe(1);
    expect(run.error).toBe(reason);
    const s = balancer.stats();
    expect(s).toMatchObject({ retrying: 0, queued: 0, inFlight: 0, failed: 1 });
    expect(balancer.shards.every((sh) => sh.bytesInFlight === 0 && sh.inFlight === 0)).toBe(true);
    await tick(clock, 5000);
    expect(run.count).toBe(1);
  });

  it('ready() resolves after queued runs are aborted out of the queue', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1, maxQueued: 2 }, ['a']);
    const ac = new AbortController();
    const first = balancer.run(() => resolveAfter(clock, 1000, 0));
    const queued = [0, 1, 2].map(() =>
      track(balancer.run(() => resolveAfter(clock, 10, 1), { signal: ac.signal })),
    );
    const ready = track(balancer.ready());
    await flush();
    expect(ready.settled).toBe(false);
    ac.abort(new Error('gone'));
    await flush();
    expect(ready.settled).toBe(true);
    expect(queued.every((q) => q.ok === false)).toBe(true);
    await tick(clock, 1000);
    await first;
  });

  it('bytesInFlight returns to 0 after timeout, abort, close without drain', async () => {
    const { clock, balancer } = make({ timeoutMs: 50, retry: false, health: false });
    const ac = new AbortController();
    const never = () => new Promise<never>(() => {});
    const a = track(balancer.run(never, { bytes: 100 }));
    const b = track(balancer.run(never, { bytes: 33, signal: ac.signal }));
    await flush();
    expect(balancer.shards.reduce((n, s) => n + s.bytesInFlight, 0)).toBe(133);
    ac.abort(new Error('x'));
    await tick(clock, 60);
    expect(a.error).toBeInstanceOf(TimeoutError);
    expect(b.settled).toBe(true);
    const c = track(balancer.run(never, { bytes: 5, timeoutMs: Number.POSITIVE_INFINITY }));
    await flush();
    await balancer.close({ drain: false });
    await flush();
    expect(c.settled).toBe(true);
    expect(balancer.shards.map((s) => [s.inFlight, s.bytesInFlight])).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  it('close({ timeoutMs }) settles runs that ignore their abort signal', async () => {
    const { clock, balancer } = make({ retry: false });
    const r = track(balancer.run(() => new Promise<never>(() => {})));
    const closing = track(balancer.close({ timeoutMs: 100 }));
    await tick(clock, 99);
    expect(closing.settled).toBe(false);
    await tick(clock, 1);
    expect(r.settled).toBe(true);
    expect(closing.ok).toBe(true);
  });

  it('timeoutMs 0, NaN, negative, past 365 days are ConfigErrors; Infinity accepted', () => {
    for (const t of [0, Number.NaN, -1, 366 * 86_400_000]) {
      expect(() => make({ timeoutMs: t })).toThrow(ConfigError);
    }
    expect(() => make({ timeoutMs: Number.POSITIVE_INFINITY })).not.toThrow();
  });
});

describe('adaptive limits stay in [min, max]', () => {
  it('aimd and gradient under hostile samples', () => {
    const rnd = seededRandom(7);
    for (const make of [
      () => aimd({ initial: 5, min: 2, max: 9 })(),
      () => gradient({ initial: 4, min: 2, max: 9 })(),
    ]) {
      const limit = make();
      for (let i = 0; i < 20_000; i++) {
        const r = rnd();
        limit.onSample({
          rttMs: r < 0.1 ? 0 : r < 0.2 ? 1e12 : r * 100,
          inFlight: r < 0.3 ? 1e9 : Math.floor(r * 20),
          dropped: r > 0.9,
        });
        expect(limit.limit).toBeGreaterThanOrEqual(2);
        expect(limit.limit).toBeLessThanOrEqual(9);
      }
    }
  });
});

describe('bytes accounting', () => {
  it('bytesInFlight returns to 0 (never negative) after runs with huge declared bytes settle', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 8, retry: false }, ['a']);
    const big = 2 ** 60;
    // Settled as they are made: the refused one rejects at once.
    const outcomes = Promise.allSettled([
      balancer.run(() => resolveAfter(clock, 10, 0), { bytes: big }),
      balancer.run(() => resolveAfter(clock, 20, 0), { bytes: 1 }),
    ]);
    await tick(clock, 30);
    const [huge, small] = await outcomes;
    // Refused at admission: past 2⁵³ − 1 the small run's byte would be lost in the sum.
    expect(huge!.status).toBe('rejected');
    expect(String((huge as PromiseRejectedResult).reason)).toMatch(/`bytes` must be at most 2⁵³/);
    expect(small!.status).toBe('fulfilled');
    expect(balancer.shards[0]!.bytesInFlight).toBe(0);
    expect(balancer.stats()).toMatchObject({ completed: 1, refused: 1 });
  });
});
