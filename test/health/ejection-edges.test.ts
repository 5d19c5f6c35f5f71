import { describe, expect, it } from 'vitest';
import { PushBackError } from '../../src/index.js';
import { flush, resolveAfter, tick, track } from '../helpers.js';
import { type Harness, healthHarness } from './harness.js';

type H = Harness;
const make = healthHarness;

/** Runs on a pinned shard (picker picks `id`), failing or not. */
async function on(h: H, fail: boolean, n = 1): Promise<void> {
  for (let i = 0; i < n; i++) {
    await h.balancer
      .run(() => (fail ? Promise.reject(new Error('500')) : Promise.resolve('ok')))
      .catch(() => {});
  }
}

const first = { name: 'first', pick: (s: readonly { id: string }[]) => s[0] } as never;

describe('ejection lengths', () => {
  it('defaults: 30 s, 60 s, … 300 s, 300 s through failed probes', async () => {
    const h = make(['a', 'b', 'c', 'd'], { picker: first, health: {} });
    await on(h, true, 5);
    for (let i = 0; i < 11; i++) {
      await tick(h.clock, h.ejects.at(-1)!.durationMs);
      expect(h.restores.at(-1)).toEqual({ shardId: 'a', phase: 'probe' });
      await on(h, true, 1); // the probe (a is first again) fails
    }
    expect(h.ejects.map((e) => e.durationMs / 1000)).toEqual([
      30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300,
    ]);
    expect(h.ejects.map((e) => e.ejections)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('a healthy spell of exactly maxEjectionMs forgives earlier ejections', async () => {
    const h = make(['a', 'b', 'c', 'd'], { picker: first, health: {} });
    await on(h, true, 5);
    await tick(h.clock, 30_000);
    await on(h, false, 1); // probe succeeds: healthy at t
    expect(h.restores.map((r) => r.phase)).toEqual(['probe', 'healthy']);
    await tick(h.clock, 300_000);
    await on(h, true, 5);
    expect(h.ejects.map((e) => e.durationMs)).toEqual([30_000, 30_000]);
  });
});

describe('cap and panic', () => {
  for (const p of [10, 25, 34]) {
    it(`maxEjectedPercent ${p}: n = 1..20 all failing ⇒ exactly max(1, floor(n·p/100)) ejected`, async () => {
      for (let n = 1; n <= 20; n++) {
        const ids = Array.from({ length: n }, (_, i) => `s${i}`);
        const h = make(ids, {
          health: { consecutiveFailures: 1, maxEjectedPercent: p, panicThreshold: 0 },
        });
        // Runs are not awaited: once every shard the cap allows is ejected... the rest still run.
        for (let i = 0; i < 3 * n; i++) {
          track(h.balancer.run(() => Promise.reject(new Error('500'))));
          await flush();
        }
        const ejected = h.balancer.stats().shards.filter((s) => s.ejected).length;
        expect(ejected, `n=${n}`).toBe(Math.max(1, Math.floor((n * p) / 100)));
        await h.balancer.close({ drain: false });
      }
    });
  }

  it('panic events pair up and stats().panic follows them (one shard)', async () => {
    const h = make(['a'], { health: {} });
    await on(h, true, 5);
    expect(h.panics).toEqual([{ active: true, healthy: 0, total: 1 }]);
    expect(h.balancer.stats().panic).toBe(true);
    // in panic the ejected shard still takes runs
    await on(h, false, 3);
    expect(h.picks).toHaveLength(8);
    await tick(h.clock, 30_000);
    expect(h.panics).toEqual([
      { active: true, healthy: 0, total: 1 },
      { active: false, healthy: 1, total: 1 },
    ]);
    expect(h.balancer.stats().panic).toBe(false);
  });

  it('removing the ejected shard ends panic (event), its timer is cancelled', async () => {
    const h = make(['a', 'b'], {
      picker: first,
      health: { maxEjectedPercent: 50, panicThreshold: 60 },
    });
    await on(h, true, 5);
    expect(h.panics).toEqual([{ active: true, healthy: 1, total: 2 }]);
    await h.balancer.removeShard('a');
    expect(h.panics).toEqual([
      { active: true, healthy: 1, total: 2 },
      { active: false, healthy: 1, total: 1 },
    ]);
    expect(h.balancer.stats().panic).toBe(false);
    expect(h.clock.pendingTimers).toBe(0);
    h.balancer.addShard({ id: 'a', target: 'a' });
    const a = h.balancer.stats().shards.find((s) => s.id === 'a')!;
    expect(a).toMatchObject({ ejected: false, ejections: 0 });
  });
});

describe('what is not the shard’s fault', () => {
  it('push-back 50 times in a row neither ejects nor counts as a failure', async () => {
    const h = make(['a', 'b'], { picker: first, health: { consecutiveFailures: 1 } });
    for (let i = 0; i < 50; i++) {
      // One attempt a run: push-back spends no attempt, so a retried run would wait it out.
      await h.balancer
        .run(() => Promise.reject(new PushBackError(1)), { retry: false })
        .catch(() => {});
      await tick(h.clock, 2);
    }
    expect(h.ejects).toEqual([]);
    expect(h.balancer.stats().shards[0]!.failures).toBe(0);
  });

  it('a caller abort of a probe neither ejects nor restores; the next call is the probe', async () => {
    const h = make(['a', 'b', 'c', 'd'], { picker: first, health: {} });
    await on(h, true, 5);
    await tick(h.clock, 30_000);
    const ac = new AbortController();
    const probe = track(
      h.balancer.run(
        (_s, ctx) =>
          new Promise((_r, rej) =>
            ctx.signal.addEventListener('abort', () => rej(new Error('aborted'))),
          ),
        { signal: ac.signal },
      ),
    );
    await flush();
    ac.abort(new Error('caller gave up'));
    await flush();
    expect(probe.ok).toBe(false);
    expect(h.ejects).toHaveLength(1);
    await on(h, false, 1);
    expect(h.restores.map((r) => r.phase)).toEqual(['probe', 'healthy']);
  });

  it('a probe that times out re-ejects for 60 s', async () => {
    const h = make(['a', 'b', 'c', 'd'], { picker: first, health: {}, timeoutMs: 1_000 });
    await on(h, true, 5);
    await tick(h.clock, 30_000);
    const probe = track(h.balancer.run(() => new Promise(() => {})));
    await tick(h.clock, 1_000);
    expect(probe.ok).toBe(false);
    expect(h.ejects.map((e) => e.durationMs)).toEqual([30_000, 60_000]);
  });
});

describe('failure-rate detector boundaries', () => {
  it('exactly failureMinRequests with exactly failurePercent failed ejects; one fewer request does not', async () => {
    const h = make(['a', 'b', 'c', 'd'], {
      picker: first,
      health: { consecutiveFailures: 100, failureMinRequests: 4, failurePercent: 50 },
    });
    await on(h, false, 2);
    await on(h, true, 1);
    expect(h.ejects).toEqual([]);
    await on(h, true, 1);
    expect(h.ejects).toHaveLength(1);
  });

  it('the window restarts after failureWindowMs: old failures do not count', async () => {
    const h = make(['a', 'b', 'c', 'd'], {
      picker: first,
      health: {
        consecutiveFailures: 100,
        failureMinRequests: 4,
        failurePercent: 50,
        failureWindowMs: 1_000,
      },
    });
    await on(h, true, 3);
    await tick(h.clock, 1_000);
    await on(h, false, 2);
    await on(h, true, 1);
    expect(h.ejects).toEqual([]);
  });

  it('health: false leaves no timers and never ejects', async () => {
    const h = make(['a', 'b'], { picker: first, health: false });
    await on(h, true, 100);
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.ejects).toEqual([]);
  });
});

describe('runs in flight on an ejected shard', () => {
  it('successes of calls started before the ejection do not restore it while ejected', async () => {
    const h = make(['a', 'b', 'c', 'd'], { picker: first, health: {} });
    const slow = [0, 1, 2].map(() =>
      track(h.balancer.run(() => resolveAfter(h.clock, 5_000, 'ok'))),
    );
    await on(h, true, 5);
    expect(h.ejects).toHaveLength(1);
    await tick(h.clock, 5_000);
    expect(slow.every((s) => s.ok)).toBe(true);
    expect(h.restores).toEqual([]);
    expect(h.balancer.stats().shards[0]!.ejected).toBe(true);
  });
});
