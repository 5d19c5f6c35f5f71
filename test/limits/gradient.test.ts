/**
 * `gradient()` on its own, fed by a fluid model of a closed shard: `callers` callers keep a call
 * outstanding each; the shard serves `capacity` at once in `serviceMs`, so with L calls at it the
 * mean RTT is serviceMs × max(1, L / capacity) (Little's law). Every sample is that mean, exactly:
 * no noise, so each step of the algorithm can be asserted exactly. The simulator tests
 * (settle.test.ts) add the waves and noise of real queues.
 */
import { describe, expect, it } from 'vitest';
import { type ConcurrencyLimit, ConfigError, gradient } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';

interface FluidShard {
  capacity: number;
  serviceMs: number;
  callers: number;
}

/** Feeds `samples` samples; returns the limit after each. `change` may alter the shard midway. */
function drive(
  limit: ConcurrencyLimit,
  shard: FluidShard,
  samples: number,
  change?: { at: number; to: Partial<FluidShard> },
): number[] {
  const seen: number[] = [];
  let s = shard;
  for (let i = 0; i < samples; i++) {
    if (change !== undefined && i === change.at) s = { ...s, ...change.to };
    const inFlight = Math.min(limit.limit, s.callers);
    const rttMs = s.serviceMs * Math.max(1, inFlight / s.capacity);
    limit.onSample({ rttMs, inFlight, dropped: false });
    seen.push(limit.limit);
  }
  return seen;
}

/** The values a sequence takes, each run of equal values once. */
function steps(values: readonly number[]): number[] {
  return values.filter((v, i) => i === 0 || v !== values[i - 1]);
}

const lastHalf = (values: readonly number[]) => values.slice(values.length >> 1);
const within = (values: readonly number[], lo: number, hi: number) =>
  values.every((v) => v >= lo && v <= hi);

describe('gradient()', () => {
  it('starts at 4 and doubles while the limit is used and the RTT holds', () => {
    const seen = drive(gradient()(), { capacity: 1_000, serviceMs: 10, callers: 100 }, 4_000);
    expect(seen[0]).toBe(4);
    expect(steps(seen).slice(0, 5)).toEqual([4, 8, 16, 32, 64]);
  });

  it('cuts a queued limit to limit × baseline ÷ RTT — the calls served at once — then measures below it', () => {
    // 4 → 8 → 16: at 16 the RTT is 16 ms against a 10 ms baseline, so the estimate is 16 / 1.6 = 10;
    // the measuring window runs at 10 × 0.99 ÷ tolerance 1.1 = 9, then it cruises at 10 and
    // probes at 11.
    const seen = drive(gradient()(), { capacity: 10, serviceMs: 10, callers: 64 }, 3_000);
    expect(steps(seen).slice(0, 6)).toEqual([4, 8, 16, 9, 10, 11]);
  });

  it.each([4, 10, 40])('settles at capacity %i and holds within ±30 %', (capacity) => {
    const seen = drive(gradient()(), { capacity, serviceMs: 10, callers: 64 }, 60_000);
    const settled = lastHalf(seen);
    expect(within(settled, 0.7 * capacity, 1.3 * capacity)).toBe(true);
    // Most of the time it sits at the capacity itself (probes and measuring windows are short).
    const at = settled.filter((v) => v === capacity).length;
    expect(at / settled.length).toBeGreaterThan(0.5);
  });

  it('probes past the capacity, and probes less often while the edge holds', () => {
    const seen = drive(gradient()(), { capacity: 10, serviceMs: 10, callers: 64 }, 60_000);
    // The sample indices where a probe (a limit above the capacity) begins.
    const starts = seen.flatMap((v, i) => (v > 10 && (seen[i - 1] ?? 0) <= 10 ? [i] : []));
    expect(starts.length).toBeGreaterThan(5);
    const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
    // 2, then 4, then 8 cruising windows between probes: the last gap is about 2.5 times the first.
    expect(gaps.at(-1)!).toBeGreaterThan(1.8 * gaps[0]!);
  });

  it('does not grow when the callers never fill it (nothing pushes back, and still no climb)', () => {
    // 6 callers against a shard that could take 1000: no queue ever shows.
    const seen = drive(gradient()(), { capacity: 1_000, serviceMs: 10, callers: 6 }, 50_000);
    expect(Math.max(...seen)).toBeLessThanOrEqual(8);
    // …nor throttle them, but for its measuring windows, which run 15 % below what they use.
    const settled = lastHalf(seen);
    expect(Math.min(...settled)).toBe(5);
    expect(settled.filter((v) => v < 6).length / settled.length).toBeLessThan(0.25);
  });

  it('follows a capacity that halves', () => {
    const seen = drive(gradient()(), { capacity: 10, serviceMs: 10, callers: 64 }, 60_000, {
      at: 20_000,
      to: { capacity: 5 },
    });
    expect(within(lastHalf(seen), 0.7 * 5, 1.3 * 5)).toBe(true);
  });

  it('a shard that turns slower (RTT × 2 at every limit) is re-learnt, not cut to the floor', () => {
    const seen = drive(gradient()(), { capacity: 10, serviceMs: 10, callers: 64 }, 60_000, {
      at: 20_000,
      to: { serviceMs: 20 },
    });
    expect(within(lastHalf(seen), 7, 13)).toBe(true);
    // It cuts (the RTT doubled) until a cut fails to lower the RTT, then undoes the cuts: back
    // within ±30 % in a few windows (≈ 50 samples each at 10 calls of 20 ms).
    expect(within(seen.slice(20_500, 30_000), 7, 13)).toBe(true);
  });

  it('starting far above the capacity, it measures lower until the RTT stops falling', () => {
    const seen = drive(
      gradient({ initial: 64 })(),
      { capacity: 4, serviceMs: 10, callers: 64 },
      20_000,
    );
    expect(within(lastHalf(seen), 0.7 * 4, 1.3 * 4)).toBe(true);
  });

  it('a drop multiplies the estimate by 0.9', () => {
    const limit = gradient({ initial: 20 })();
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      limit.onSample({ rttMs: 5_000, inFlight: 20, dropped: true });
      seen.push(limit.limit);
    }
    // 20 × 0.9 = 18, × 0.9 = 16.2, × 0.9 = 14.58: the limit is the estimate's whole calls.
    expect(seen).toEqual([18, 16, 14]);
  });

  it('never leaves [min, max]', () => {
    const limit = gradient({ initial: 4, min: 2, max: 8 })();
    const seen = drive(limit, { capacity: 1_000, serviceMs: 5, callers: 100 }, 5_000);
    expect(Math.max(...seen)).toBe(8);
    for (let i = 0; i < 200; i++) limit.onSample({ rttMs: 5, inFlight: 8, dropped: true });
    expect(limit.limit).toBe(2);
  });

  it('keeps `max` below the default start: gradient({ max: 2 }) starts at 2', () => {
    expect(gradient({ max: 2 })().limit).toBe(2);
  });

  describe("on a real shard's shape (what loopback showed: bench/adaptive.bench.ts)", () => {
    /**
     * A call spends `outsideMs` outside the shard (client, kernel, parsing: 1.4 ms on loopback
     * against a 10 ms service), so the shard fills only past capacity × (service + outside) ÷
     * service calls: 1.14 × N. Each 100 ms of virtual time the machine is a little faster or
     * slower (±3 %), and now and then it stalls (+15 % for 100–300 ms), as a collection or another
     * process does. Seeded: the same run every time.
     */
    function driveReal(capacity: number, seed: number, seconds: number): number[] {
      const limit = gradient()();
      const random = seededRandom(seed);
      const serviceMs = 10;
      const outsideMs = 1.4;
      const seen: number[] = [];
      let now = 0;
      let segment = -1;
      let factor = 1;
      let stallLeft = 0;
      while (now < seconds * 1000) {
        const at = Math.floor(now / 100);
        if (at !== segment) {
          segment = at;
          if (stallLeft === 0 && random() < 0.04) stallLeft = 1 + Math.floor(random() * 3);
          factor = (1 + 0.03 * (2 * random() - 1)) * (stallLeft > 0 ? 1.15 : 1);
          if (stallLeft > 0) stallLeft--;
        }
        const inFlight = Math.min(limit.limit, 64);
        // Little's law at the shard: it serves at most capacity ÷ service calls a millisecond.
        const rttMs = factor * Math.max(serviceMs + outsideMs, (inFlight * serviceMs) / capacity);
        limit.onSample({ rttMs, inFlight, dropped: false });
        seen.push(limit.limit);
        now += rttMs / inFlight;
      }
      return seen;
    }

    it.each([4, 10, 40])(
      'holds within ±30 percent of a capacity of %i, probes included, over 10 seeds',
      (capacity) => {
        for (let seed = 1; seed <= 10; seed++) {
          const settled = lastHalf(driveReal(capacity, seed, 20));
          expect([seed, Math.min(...settled), Math.max(...settled)]).toEqual([
            seed,
            expect.toSatisfy((v: number) => v >= 0.7 * capacity),
            expect.toSatisfy((v: number) => v <= 1.3 * capacity),
          ]);
        }
      },
    );
  });

  it.each([
    [{ smoothing: 0 }, 'gradient.smoothing'],
    [{ longWindow: 0 }, 'gradient.longWindow'],
    [{ tolerance: 0.9 }, 'gradient.tolerance'],
    [{ tolerance: -1 }, 'gradient.tolerance'],
    [{ queueSize: -1 }, 'gradient.queueSize'],
    [{ initial: 1, min: 2 }, 'gradient.initial'],
    [{ window: 5 }, 'gradient.window'],
  ])('rejects %o naming %s', (options, field) => {
    expect(() => gradient(options as never)).toThrow(ConfigError);
    expect(() => gradient(options as never)).toThrow(field);
  });
});
