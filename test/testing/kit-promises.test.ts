/**
 * The kit's own promises at their edges: the clock's timer order, shard views that refuse a
 * write from any picker, and a warm-up that can never end named as such instead of a hang.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { roundRobin } from '../../src/pickers/index.js';
import { constant, ManualClock, shardViews, simulate } from '../../src/testing/index.js';

describe('ManualClock.setTimer checks what it is given', () => {
  it('a NaN delay is a ConfigError, so no later timer is passed over by advance()', () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    clock.setTimer(() => fired.push('b@10'), 10);
    expect(() => clock.setTimer(() => fired.push('nan'), Number.NaN)).toThrow(
      /`setTimer ms` must be a number of ms, got NaN/,
    );
    clock.setTimer(() => fired.push('c@5'), 5);
    clock.advance(5);
    expect(fired).toEqual(['c@5']);
    clock.advance(5);
    expect(fired).toEqual(['c@5', 'b@10']);
  });

  it('arguments the wrong way round fail at the call, naming the function', () => {
    const clock = new ManualClock();
    const swapped = () => clock.setTimer(5 as never, (() => {}) as never);
    expect(swapped).toThrow(ConfigError);
    expect(swapped).toThrow(/`setTimer fn` must be a function, got 5/);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('shardViews: a write throws', () => {
  it('from sloppy-mode (CommonJS) code too, where a frozen data field drops it silently', () => {
    const [view] = shardViews([{ id: 'a', inFlight: 3 }]);
    // Code compiled without "use strict", as a plain CommonJS picker is.
    const write = new Function('s', 's.inFlight = 0; return s.inFlight;') as (s: unknown) => number;
    expect(() => write(view)).toThrow(/Cannot set inFlight: a shard is read-only/);
    expect(view!.inFlight).toBe(3);
    expect(Object.isFrozen(view)).toBe(true);
    // Still a plain-reading object: spread and JSON see every figure.
    expect({ ...view }).toMatchObject({ id: 'a', inFlight: 3, load: 3, index: 0 });
  });
});

describe('simulate: a warm-up that can never end', () => {
  it('closed loop, 0 ms service, warmupMs: a ConfigError naming warmupMs, not a hang', async () => {
    const outcome = simulate({
      picker: roundRobin,
      shards: [{ id: 'a', latency: constant(0) }],
      concurrency: 2,
      requests: 10,
      warmupMs: 100,
      seed: 1,
    });
    await expect(outcome).rejects.toThrow(ConfigError);
    await expect(outcome).rejects.toThrow(/`warmupMs` is never reached: .*use warmupRequests/);
    // The same warm-up by count ends.
    const r = await simulate({
      picker: roundRobin,
      shards: [{ id: 'a', latency: constant(0) }],
      concurrency: 2,
      requests: 10,
      warmupRequests: 100,
      seed: 1,
    });
    expect(r.warmup.requests).toBe(100);
    expect(r.perShard[0]!.requests).toBe(10);
  });

  it('closed loop, the only shard down from t = 0 (runs fail at once), warmupMs: settles with that error', async () => {
    // Before: the runs re-issued one another in microtasks at t = 0 for ever; the event loop
    // never turned (no timeout could stop it).
    const outcome = simulate({
      picker: roundRobin,
      balancerOptions: { retry: { attempts: 1 }, health: false },
      shards: [{ id: 'a', latency: 5, schedule: [{ atMs: 0, down: true }] }],
      concurrency: 2,
      requests: 10,
      warmupMs: 100,
      seed: 1,
    });
    await expect(outcome).rejects.toThrow(/`warmupMs` is never reached/);
  });
});
