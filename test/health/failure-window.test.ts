import { describe, expect, it } from 'vitest';
import { makeBalancer, shardsOf, tick } from '../helpers.js';

/**
 * Three shards, every run on 'a', no retries, only the failure-rate detector at work (the
 * consecutive-failure one and the ejection cap out of the way); `attempt(fail)` runs one call.
 */
function setup() {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a', 'b', 'c']),
    retry: false,
    health: { consecutiveFailures: 1_000, maxEjectedPercent: 50 },
    picker: { name: 'first', pick: (s) => s[0] },
  });
  let ejections = 0;
  balancer.on('eject', () => ejections++);
  const attempt = (fail: boolean) =>
    balancer
      .run(async () => {
        if (fail) throw new Error('bad');
      })
      .catch(() => undefined);
  return { clock, attempt, ejections: () => ejections };
}

describe('the failure-rate window slides (docs/retries-and-health.md)', () => {
  // "a shard is ejected … when at least `failurePercent` % (default 50) of its attempts failed
  // within `failureWindowMs` (10 000) once it had `failureMinRequests` (20) there"
  it('failure percentage: 20 of 20 attempts failed within the last failureWindowMs ejects the shard', async () => {
    const { clock, attempt, ejections } = setup();
    // t = 0: one success; t = 9.5 s: 9 failures; t = 10.5 s: 11 failures.
    await attempt(false);
    await tick(clock, 9_500);
    for (let i = 0; i < 9; i++) await attempt(true);
    await tick(clock, 1_000);
    for (let i = 0; i < 11; i++) await attempt(true);
    // In the last 10 s (0.5 s … 10.5 s) shard 'a' had 20 attempts, and all 20 failed.
    expect(ejections()).toBe(1);
  });

  it('failures that left the window no longer count; a slice leaves whole', async () => {
    const { clock, attempt, ejections } = setup();
    // 19 failures at t = 0.2 s, in the window's first slice [0, 1 s).
    await tick(clock, 200);
    for (let i = 0; i < 19; i++) await attempt(true);
    // At 10.9 s that slice is still 10.9 s old from its start, but ten slices on: it has left.
    await tick(clock, 10_700);
    await attempt(true);
    expect(ejections()).toBe(0);
    // 19 more within the window with the one above: 20 of 20 → ejected.
    for (let i = 0; i < 19; i++) await attempt(true);
    expect(ejections()).toBe(1);
  });
});
