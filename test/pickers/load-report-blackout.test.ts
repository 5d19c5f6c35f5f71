/**
 * weightedByLoadReport: `blackoutMs` is the "time after a shard's first report (or its first
 * after an expiry) before its weight counts" (src/pickers/weighted-by-load-report.ts, the option's
 * doc); docs/reference.md: weights count "after a 10 s blackout, until 3 min after the last report";
 * docs/fleet.md: "A shard's weight counts `blackoutMs` after its first report (fresh figures are
 * noisy) and stops `expiryMs` after its last". A custom transport feeds reports with
 * `balancer.reportLoad()` — out of band, whether or not runs are being picked.
 */
import { describe, expect, it } from 'vitest';
import { weightedByLoadReport } from '../../src/index.js';
import { LoadReportStore } from '../../src/load/load-report.js';
import { ManualClock } from '../../src/testing/index.js';
import { makeBalancer, shardsOf } from '../helpers.js';

describe('weightedByLoadReport: a blackout after an expiry', () => {
  it('restarts when the reports expired while the balancer was idle (no pick saw the expiry)', async () => {
    const picker = weightedByLoadReport({ blackoutMs: 10_000, expiryMs: 60_000 });
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker,
      maxInFlightPerShard: 1_000,
    });
    const weights = () => ['a', 'b', 'c'].map((id) => picker.weightOf(id));
    const onePick = () => balancer.run(async () => undefined);
    for (const id of ['a', 'b', 'c'])
      balancer.reportLoad(id, { cpuUtilization: 0.5, rpsFractional: 100 });
    clock.advance(11_000);
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 1_000 });
    await onePick();
    expect(weights()).toEqual([2_000, 200, 200]); // past the blackout: the figures count

    // Five idle minutes: every report is long expired, and no run was picked meanwhile.
    clock.advance(300_000);
    // 'a' reports again; one second later a run is picked.
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 1_000 });
    clock.advance(1_000);
    await onePick();
    // 'a' is 1 s into a new blackout and 'b', 'c' are expired: no usable weight, all 1.
    expect(weights()).toEqual([1, 1, 1]);
    await balancer.close();
  });
});

describe('LoadReportStore.streakStartMs', () => {
  it('finds the first report after the latest silence at least as long as asked', () => {
    const clock = new ManualClock();
    const store = new LoadReportStore(clock);
    const report = (atMs: number) => {
      clock.advanceTo(atMs);
      store.record({ cpuUtilization: 0.5, rpsFractional: 10 });
    };
    report(0);
    report(10);
    report(500); // a silence of 490
    report(510);
    report(600); // 90
    report(5_000); // 4 400
    report(5_050);
    expect(store.streakStartMs(50)).toBe(5_050);
    expect(store.streakStartMs(100)).toBe(5_000);
    expect(store.streakStartMs(400)).toBe(5_000);
    expect(store.streakStartMs(4_401)).toBe(0);
    expect(store.firstAtMs).toBe(0);
  });
});
