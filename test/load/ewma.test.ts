import { describe, expect, it } from 'vitest';
import { Balancer, type Clock, PeakEwma, peakEwma, roundRobin } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer, resolveAfter, shardsOf, tick } from '../helpers.js';

describe('PeakEwma', () => {
  it('reads the 30 ms default before any sample, whatever the time', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    expect(ewma.valueMs).toBe(30);
    expect(ewma.sampled).toBe(false);
    clock.advance(50_000);
    expect(ewma.valueMs).toBe(30);
    expect(ewma.decayMs).toBe(10_000);
    expect(ewma.defaultRttMs).toBe(30);
  });

  it('takes the first sample as the estimate, even below the default', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    ewma.observe(12);
    expect(ewma.sampled).toBe(true);
    expect(ewma.valueMs).toBe(12);
  });

  it('takes a higher sample at once (the peak)', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    ewma.observe(100);
    clock.advance(1_000);
    ewma.observe(150);
    expect(ewma.valueMs).toBe(150);
    // Even right after a sample, a higher one replaces the estimate.
    ewma.observe(400);
    expect(ewma.valueMs).toBe(400);
  });

  it('blends a lower sample with w = exp(-Δt / decay)', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    ewma.observe(100);
    clock.advance(1_000);
    ewma.observe(20);
    const w = Math.exp(-1_000 / 10_000);
    const expected = 100 * w + 20 * (1 - w);
    expect(ewma.valueMs).toBeCloseTo(expected, 10);
    expect(ewma.valueMs).toBeCloseTo(92.3869, 3);

    // A second lower sample 2 s later blends from the new estimate.
    clock.advance(2_000);
    ewma.observe(10);
    const w2 = Math.exp(-2_000 / 10_000);
    expect(ewma.valueMs).toBeCloseTo(expected * w2 + 10 * (1 - w2), 10);
  });

  it('a lower sample with no time elapsed leaves the estimate unchanged (w = 1)', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    ewma.observe(100);
    ewma.observe(1);
    expect(ewma.valueMs).toBe(100);
  });

  it('decays reads towards zero by exp(-elapsed / decay), without changing the estimate', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    ewma.observe(100);
    clock.advance(5_000);
    expect(ewma.valueMs).toBeCloseTo(100 * Math.exp(-0.5), 10);
    clock.advance(5_000);
    expect(ewma.valueMs).toBeCloseTo(100 * Math.exp(-1), 10);
    clock.advance(90_000);
    expect(ewma.valueMs).toBeCloseTo(100 * Math.exp(-10), 10);
    expect(ewma.valueMs).toBeLessThan(0.01);
  });

  it('honours custom decayMs and defaultRttMs', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock, { decayMs: 1_000, defaultRttMs: 5 });
    expect(ewma.valueMs).toBe(5);
    ewma.observe(80);
    clock.advance(500);
    expect(ewma.valueMs).toBeCloseTo(80 * Math.exp(-0.5), 10);
    ewma.observe(40);
    const w = Math.exp(-500 / 1_000);
    expect(ewma.valueMs).toBeCloseTo(80 * w + 40 * (1 - w), 10);
  });

  it('starts from the clock time, not zero: Δt is measured on the injected clock', () => {
    const clock = new ManualClock(1_000_000);
    const ewma = new PeakEwma(clock);
    ewma.observe(100);
    expect(ewma.valueMs).toBe(100);
    clock.advance(10_000);
    expect(ewma.valueMs).toBeCloseTo(100 * Math.exp(-1), 10);
  });
});

describe('PeakEwma inside the balancer', () => {
  it('shards report the picker’s defaultRttMs before a sample and the measured latency after', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: peakEwma({ defaultRttMs: 7, decayMs: 2_000 }),
    });
    expect(balancer.stats().shards.map((s) => s.ewmaMs)).toEqual([7, 7]);
    const done = balancer.run((shard) => resolveAfter(clock, 40, shard.id));
    await flush();
    await tick(clock, 40);
    const id = await done;
    const stats = balancer.stats().shards;
    const ran = stats.find((s) => s.id === id)!;
    const other = stats.find((s) => s.id !== id)!;
    expect(ran.ewmaMs).toBe(40);
    expect(other.ewmaMs).toBe(7);
    clock.advance(1_000);
    expect(balancer.stats().shards.find((s) => s.id === id)!.ewmaMs).toBeCloseTo(
      40 * Math.exp(-1_000 / 2_000),
      10,
    );
  });

  it('a picker without ewma settings measures with the defaults (30 ms, 10 s)', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a']),
      picker: roundRobin(),
    });
    expect(balancer.stats().shards[0]!.ewmaMs).toBe(30);
    const done = balancer.run(() => resolveAfter(clock, 100, 'x'));
    await tick(clock, 100);
    await done;
    clock.advance(10_000);
    expect(balancer.stats().shards[0]!.ewmaMs).toBeCloseTo(100 * Math.exp(-1), 10);
  });
});

describe('hold()', () => {
  it('keeps the estimate where the last sample set it and restarts its decay; nothing before a sample', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    ewma.hold(clock.now());
    expect(ewma.sampled).toBe(false);
    ewma.observe(200);
    clock.advance(60_000);
    expect(ewma.valueMs).toBeCloseTo(200 * Math.exp(-6), 9);
    ewma.hold(clock.now()); // a fast failure: evidence, but no latency
    expect(ewma.valueMs).toBe(200);
    clock.advance(10_000);
    expect(ewma.valueMs).toBeCloseTo(200 * Math.exp(-1), 9);
  });
});

describe('a clock that steps back (a wall clock given where a monotonic one belongs)', () => {
  it('PeakEwma keeps its estimate when a sample is stamped before the last one', () => {
    const clock = new ManualClock();
    const ewma = new PeakEwma(clock);
    clock.advance(100_000);
    ewma.observe(10);
    // 60 s back: exp(+6) as the weight would blow the estimate up to 10·403 − 5·402 ms.
    ewma.observeAt(5, clock.now() - 60_000);
    expect(ewma.valueMs).toBe(10);
  });

  it('the balancer measures an attempt that spans the step as 0 ms, not −60 s', async () => {
    const clock = new ManualClock();
    let offset = 0;
    const stepping = {
      now: () => clock.now() + offset,
      setTimer: (fn: () => void, ms: number) => clock.setTimer(fn, ms),
    };
    const balancer = new Balancer({
      shards: [{ id: 'a', target: 'a' }],
      picker: peakEwma(),
      clock: stepping,
      random: seededRandom(1),
    });
    const latencies: number[] = [];
    balancer.on('success', (e) => latencies.push(e.latencyMs));
    clock.advance(100_000);
    const first = balancer.run(() => resolveAfter(clock, 10, 'x'));
    await tick(clock, 10);
    await first;
    const second = balancer.run(async () => {
      offset = -60_000;
      return 'y';
    });
    await second;
    expect(latencies).toEqual([10, 0]);
    // Not 6.8e6 ms (a −60 s sample blended with a weight of e⁶), which kept the shard "slow"
    // for minutes; the 0 ms sample at a step back leaves the estimate as it was.
    expect(balancer.stats().shards[0]!.ewmaMs).toBe(10);
  });
});

describe('decay()', () => {
  it('is exp(−x) to within 3·10⁻⁹ (relative) on both sides of the series cut-over', async () => {
    const { decay } = await import('../../src/load/ewma.js');
    for (const x of [0, 1e-6, 0.001, 0.01, 0.03, 0.0499, 0.05, 0.1, 1, 5]) {
      expect(Math.abs(decay(x) - Math.exp(-x)) / Math.exp(-x)).toBeLessThan(3e-9);
    }
  });

  // docs/reference.md `clock`: "a clock that steps back anyway measures the attempt that spans the step as
  // 0 ms and leaves the latency estimates as they were."
  it('a shard with no sample yet keeps its default estimate (the spanning attempt is not a 0 ms sample)', async () => {
    let t = 1_000;
    const clock: Clock = { now: () => t, setTimer: () => () => {} };
    const balancer = new Balancer<string>({
      shards: [{ id: 'a', target: 'a' }],
      clock,
      random: seededRandom(1),
    });
    const before = balancer.shards[0]!.rttMs;
    expect(before).toBe(30); // defaultRttMs: no sample yet
    const latencies: number[] = [];
    balancer.on('success', ({ latencyMs }) => latencies.push(latencyMs));
    await balancer.run(async () => {
      t = 500; // the system clock steps back during the attempt
    });
    expect(latencies).toEqual([0]);
    expect(balancer.shards[0]!.rttMs).toBe(before);
  });
});
