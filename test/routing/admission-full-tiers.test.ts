import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/testing/index.js';
import { flush, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

function make(clock: ManualClock, extra: object = {}) {
  return makeBalancer({
    clock,
    shards: [
      { id: 'local', target: 'local', labels: { site: 'onprem' } },
      { id: 'cloud', target: 'cloud', labels: { site: 'cloud' } },
    ],
    prefer: [{ site: 'onprem' }, { site: 'cloud' }],
    maxInFlightPerShard: 1,
    health: false,
    ...extra,
  }).balancer;
}

describe("overflow 'reject' full, prefer tiers, spillAfterMs 0 (default)", () => {
  it('a run whose first tier is saturated spills at once to a free tier, not QueueFullError', async () => {
    const clock = new ManualClock();
    const b = make(clock, { maxQueued: 1, overflow: 'reject' });
    track(b.run(() => new Promise<string>(() => {}))); // local busy
    track(b.run(() => resolveAfter(clock, 5, 'x'), { require: { site: 'onprem' } })); // waits: queue full
    await flush();
    expect(b.stats().queued).toBe(1);
    const c = track(b.run((s) => resolveAfter(clock, 5, s.id)));
    await tick(clock, 10);
    // docs/routing-rules.md: a saturated tier "holds the run for `spillAfterMs` (default 0)
    // before it spills"; docs/backpressure.md: only "a run that would queue past maxQueued rejects"
    expect(c.error).toBeUndefined();
    expect(c.value).toBe('cloud');
    await b.close({ drain: false });
  });

  it('control: not full, the same run spills at once to cloud', async () => {
    const clock = new ManualClock();
    const b = make(clock, { maxQueued: 2, overflow: 'reject' });
    track(b.run(() => new Promise<string>(() => {})));
    track(b.run(() => resolveAfter(clock, 5, 'x'), { require: { site: 'onprem' } }));
    await flush();
    const c = track(b.run((s) => resolveAfter(clock, 5, s.id)));
    await tick(clock, 10);
    expect(c.value).toBe('cloud');
    await b.close({ drain: false });
  });
});
