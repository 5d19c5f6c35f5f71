/**
 * Feedback, the room that writes what an attempt taught: it returns what changed beyond the
 * shard's figures — a limit moved, a health change — for the dispatcher to act on once its step
 * is done; it calls nobody back.
 */
import { describe, expect, it } from 'vitest';
import { PushBackError } from '../../src/base/errors.js';
import { resolveHealthOptions } from '../../src/health/options.js';
import { OutlierDetector } from '../../src/health/outlier.js';
import { aimd } from '../../src/limits/index.js';
import { Feedback } from '../../src/load/feedback.js';
import { Shard } from '../../src/load/shard.js';
import { ManualClock } from '../../src/testing/index.js';

function setup(limit: number | ReturnType<ReturnType<typeof aimd>> = 4) {
  const clock = new ManualClock();
  const shards = [0, 1, 2].map(
    (i) => new Shard<string>({ id: `s${i}`, target: '' }, i, limit, clock, {}),
  );
  const calls: string[] = [];
  const outliers = new OutlierDetector<Shard<string>>(
    resolveHealthOptions({ consecutiveFailures: 2 }) as never,
    {
      clock,
      members: () => shards,
      healthChanged: (shard, change) => calls.push(`${shard.id}:${change}`),
    },
  );
  return { clock, shards, calls, feedback: new Feedback<string>(() => true, outliers) };
}

describe('Feedback', () => {
  it('returns the ejection a failure made, and calls nobody back for it', () => {
    const { clock, shards, calls, feedback } = setup();
    const s0 = shards[0]!;
    expect(feedback.failed(s0, new Error('500'), true, 5, clock.now(), false)).toBeUndefined();
    const ejected = feedback.failed(s0, new Error('500'), true, 5, clock.now(), false);
    expect(ejected).toEqual({ change: 'eject', durationMs: 30_000, early: false });
    expect(s0.health.state).toBe('ejected');
    expect(calls).toEqual([]);
    // The ejection's end is a timer's: that one the detector tells its host.
    clock.advance(30_000);
    expect(calls).toEqual(['s0:probe']);
    expect(feedback.succeeded(s0, 5, clock.now(), true)).toEqual({
      change: 'restore',
      durationMs: 0,
      early: false,
    });
    expect(calls).toEqual(['s0:probe']);
  });

  it('a push-back holds the shard and is no health change', () => {
    const { clock, shards, feedback } = setup();
    const s1 = shards[1]!;
    expect(
      feedback.failed(s1, new PushBackError(500), true, 1, clock.now(), false),
    ).toBeUndefined();
    expect(s1.pushedBackAt(clock.now())).toBe(true);
    expect(s1.health.consecutiveFailures).toBe(0);
  });

  it('returns how an adaptive limit moved (it set the shard’s cap)', () => {
    const { shards, feedback } = setup(aimd({ initial: 4, backoffRatio: 0.5 })());
    const s2 = shards[2]!;
    expect(s2.limit).toBe(4);
    expect(feedback.sample(s2, 10, true)).toEqual({ limit: 2, previous: 4 });
    expect(s2.limit).toBe(2);
    expect(feedback.sample(s2, 10, true)).toEqual({ limit: 1, previous: 2 });
    expect(feedback.sample(s2, 10, true)).toBeUndefined(); // at its floor: nothing moved
  });
});
