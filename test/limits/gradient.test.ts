import { describe, expect, it } from 'vitest';
import { ConfigError, gradient } from '../../src/index.js';

describe('gradient()', () => {
  it('follows the Gradient2 update exactly on a scripted RTT sequence', () => {
    const o = {
      initial: 20,
      min: 1,
      max: 200,
      smoothing: 0.2,
      longWindow: 600,
      tolerance: 1.5,
      queueSize: 4,
    };
    const limit = gradient(o)();
    // Mirror of the documented update, step by step.
    let value = o.initial;
    let longRtt = 0;
    let n = 0;
    const step = (rtt: number, inFlight: number, dropped = false) => {
      n++;
      const appLimited = inFlight * 2 < value;
      if (n === 1) longRtt = rtt;
      else if (appLimited || rtt <= longRtt) {
        // The baseline does not learn from the limit's own queueing.
        const f = 2 / (Math.min(n, o.longWindow) + 1);
        longRtt = longRtt * (1 - f) + rtt * f;
      }
      if (longRtt / rtt > 2) longRtt *= 0.95;
      if (!dropped && appLimited) return;
      const target = dropped
        ? value * 0.5
        : value * Math.max(0.5, Math.min(1, (o.tolerance * longRtt) / rtt)) + o.queueSize;
      const next = value * (1 - o.smoothing) + target * o.smoothing;
      value = Math.min(o.max, Math.max(o.min, next));
    };
    const script: [number, number, boolean?][] = [
      ...Array.from({ length: 30 }, (): [number, number] => [10, 40]), // steady: grows by head-room
      [40, 40], // latency jumps 4×: the limit must shrink
      [45, 40],
      [10, 5], // not in use: no growth
      [10, 40, true], // a drop
    ];
    const seen: number[] = [];
    for (const [rtt, inFlight, dropped] of script) {
      limit.onSample({ rttMs: rtt, inFlight, dropped: dropped ?? false });
      step(rtt, inFlight, dropped);
      expect(limit.limit).toBe(Math.floor(value));
      seen.push(limit.limit);
    }
    // Growth while latency holds, shrinkage when it rises, none while unused, less after a drop.
    expect(seen[29]!).toBeGreaterThan(20);
    expect(seen[31]!).toBeLessThan(seen[29]!);
    expect(seen[32]!).toBe(seen[31]!);
    expect(seen[33]!).toBeLessThan(seen[32]!);
  });

  it('never leaves [min, max]', () => {
    const limit = gradient({ initial: 4, min: 2, max: 8 })();
    for (let i = 0; i < 200; i++) limit.onSample({ rttMs: 5, inFlight: 100, dropped: false });
    expect(limit.limit).toBe(8);
    for (let i = 0; i < 200; i++) limit.onSample({ rttMs: 5, inFlight: 100, dropped: true });
    expect(limit.limit).toBe(2);
  });

  it.each([
    [{ smoothing: 0 }, 'gradient.smoothing'],
    [{ longWindow: 0 }, 'gradient.longWindow'],
    [{ tolerance: -1 }, 'gradient.tolerance'],
    [{ initial: 1, min: 2 }, 'gradient.initial'],
    [{ window: 5 }, 'gradient.window'],
  ])('rejects %o naming %s', (options, field) => {
    expect(() => gradient(options as never)).toThrow(ConfigError);
    expect(() => gradient(options as never)).toThrow(field);
  });
});
