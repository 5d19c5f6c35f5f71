/**
 * Keyed placement users can trust (issue 12): with strict affinity, the default for keyed
 * pickers, a keyed run runs on its key's home shard or waits for it; with `affinity: 'spill'` it
 * may move, and every move is counted and evented with its reason and home.
 */
import { describe, expect, it } from 'vitest';
import {
  type Balancer,
  type ConsistentHashPicker,
  consistentHash,
  ShardUnavailableError,
} from '../../src/index.js';
import { type ManualClock, seededRandom } from '../../src/testing/index.js';
import {
  failAfter,
  keyHomedOn,
  makeBalancer,
  recorded,
  resolveAfter,
  shardsOf,
  type TestBalancerOptions,
  tick,
  track,
} from '../helpers.js';

const IDS = ['a', 'b', 'c'];

function make(picker: ConsistentHashPicker, options: TestBalancerOptions<string> = {}) {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(IDS),
    picker,
    random: seededRandom(3),
    ...options,
  });
  const routes = recorded(balancer, 'route');
  return { clock, balancer, routes };
}

/** 300 keyed runs at once, each holding its slot 50 ms; where each key ran, in order. */
async function burst(clock: ManualClock, balancer: Balancer<string>) {
  const ranOn = new Map<string, string[]>();
  const runs = Array.from({ length: 300 }, (_, i) => {
    const key = `object-${i}`;
    return balancer.run(
      (shard) => {
        ranOn.set(key, [...(ranOn.get(key) ?? []), shard.id]);
        return resolveAfter(clock, 50, shard.id);
      },
      { key },
    );
  });
  for (let i = 0; i < 400 && balancer.stats().completed < 300; i++) await tick(clock, 10);
  await Promise.all(runs);
  return ranOn;
}

describe('strict affinity (the default for keyed pickers)', () => {
  for (const algorithm of ['ring', 'maglev'] as const) {
    it(`${algorithm}: 300 concurrent keyed runs each run on the key's home, none displaced, with the default cap`, async () => {
      const picker = consistentHash({ algorithm });
      expect(picker.affinity).toBe('strict');
      const { clock, balancer, routes } = make(picker);
      const ranOn = await burst(clock, balancer);
      // The default cap (32 per shard) binds: 300 runs over 3 shards wait for their home.
      expect(Math.max(...balancer.stats().shards.map((s) => s.requests))).toBeGreaterThan(32);
      for (const [key, shards] of ranOn) {
        expect(shards).toEqual([balancer.homeOf(key)]);
      }
      expect(ranOn.size).toBe(300);
      expect(balancer.stats().displaced.total).toBe(0);
      expect(routes.every((r) => r.reason === 'direct' && r.home === r.shardId)).toBe(true);
    });
  }

  it('waits for the home shard without blocking other keys (no head-of-line blocking)', async () => {
    const { clock, balancer } = make(consistentHash({ algorithm: 'maglev' }), {
      maxInFlightPerShard: 1,
    });
    const key = (home: string) => keyHomedOn(balancer, home);
    const order: string[] = [];
    const hold = (label: string, ms: number) => (shard: { id: string }) => {
      order.push(`${label}@${shard.id}`);
      return resolveAfter(clock, ms, label);
    };
    // a is busy 100 ms; a second run for a waits; a run for b, admitted after it, starts at once.
    const first = balancer.run(hold('a1', 100), { key: key('a') });
    const second = track(balancer.run(hold('a2', 10), { key: key('a') }));
    const other = track(balancer.run(hold('b1', 10), { key: key('b') }));
    await tick(clock, 10);
    expect(order).toEqual(['a1@a', 'b1@b']);
    expect(other.settled).toBe(true);
    expect(second.settled).toBe(false);
    expect(balancer.stats().queued).toBe(1);
    await tick(clock, 100);
    expect(order).toEqual(['a1@a', 'b1@b', 'a2@a']);
    await first;
    expect(balancer.stats().displaced.total).toBe(0);
  });

  it('a failed attempt is retried on the home shard, with the usual backoff', async () => {
    const { clock, balancer } = make(consistentHash({ algorithm: 'ring' }));
    const shards: string[] = [];
    const run = balancer.run(
      (shard, ctx) => {
        shards.push(shard.id);
        return ctx.attempt === 1
          ? failAfter(clock, 5, new Error('flaky'))
          : resolveAfter(clock, 5, 'ok');
      },
      { key: 'tenant-7', idempotent: true },
    );
    await tick(clock, 2_000);
    expect(await run).toBe('ok');
    expect(shards).toEqual([balancer.homeOf('tenant-7'), balancer.homeOf('tenant-7')]);
    expect(balancer.stats()).toMatchObject({ retries: 1, displaced: { total: 0 } });
  });

  it('while the home is ejected, a keyed run waits for it (probing it early) up to its delivery deadline, then rejects with ShardUnavailableError naming it', async () => {
    const { clock, balancer } = make(consistentHash({ algorithm: 'maglev' }), {
      health: { consecutiveFailures: 1, baseEjectionMs: 10_000, maxEjectedPercent: 50 },
      retry: { attempts: 3, backoff: { baseMs: 0, maxMs: 0 }, budget: false },
      deliveryTimeoutMs: 1_000,
    });
    const key = 'customer-1';
    const home = balancer.homeOf(key)!;
    const failed = track(
      balancer.run(() => failAfter(clock, 1, new Error('down')), { key, retry: false }),
    );
    await tick(clock, 1);
    expect((failed.error as Error).message).toBe('down');
    expect(balancer.stats().shards.find((s) => s.id === home)!.ejected).toBe(true);
    // The home refuses every connection: each early probe (the waiting run itself) is refused,
    // spending no attempt, and the run waits on.
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const waiting = track(balancer.run(() => failAfter(clock, 1, refused), { key }));
    await tick(clock, 999);
    expect(waiting.settled).toBe(false);
    const stats = balancer.stats();
    expect(stats.queued + stats.retrying).toBe(1);
    await tick(clock, 1);
    expect(waiting.error).toBeInstanceOf(ShardUnavailableError);
    expect((waiting.error as ShardUnavailableError).shardId).toBe(home);
    expect((waiting.error as ShardUnavailableError).code).toBe('SHARDWISE_SHARD_UNAVAILABLE');
    // It ran nowhere else: every attempt was on its home (the first run's, and the probes).
    const requests = balancer.stats().shards.map((s) => [s.id, s.requests]);
    expect(requests.filter(([id, n]) => id !== home && n !== 0)).toEqual([]);
    expect(balancer.stats().queued + balancer.stats().retrying).toBe(0);
  });

  it('a run waiting for an ejected home starts when the home comes back (probe), before its deadline', async () => {
    const { clock, balancer } = make(consistentHash({ algorithm: 'maglev' }), {
      health: { consecutiveFailures: 1, baseEjectionMs: 500, maxEjectedPercent: 50 },
      retry: false,
      timeoutMs: 5_000,
    });
    const key = 'customer-2';
    track(balancer.run(() => failAfter(clock, 1, new Error('down')), { key }));
    await tick(clock, 1);
    const waiting = track(balancer.run((shard) => resolveAfter(clock, 1, shard.id), { key }));
    await tick(clock, 600);
    expect(waiting.value).toBe(balancer.homeOf(key));
  });

  it('removing the home shard gives its keys a new home, and moves no other key', async () => {
    const { clock, balancer } = make(consistentHash({ algorithm: 'ring' }));
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const before = new Map(keys.map((k) => [k, balancer.homeOf(k)!]));
    await balancer.removeShard('b');
    const ran = keys.map((key) =>
      track(balancer.run((shard) => resolveAfter(clock, 1, shard.id), { key })),
    );
    await tick(clock, 100);
    keys.forEach((key, i) => {
      if (before.get(key) === 'b') expect(ran[i]!.value).not.toBe('b');
      else expect(ran[i]!.value).toBe(before.get(key));
    });
    expect(
      ran.filter((r, i) => before.get(keys[i]!) === 'b' && r.value !== undefined).length,
    ).toBeGreaterThan(0);
  });

  it('keyed runs waiting for a capped home follow their key when the membership changes', async () => {
    const { clock, balancer } = make(consistentHash({ algorithm: 'ring' }), {
      maxInFlightPerShard: 1,
    });
    const key = (home: string) => keyHomedOn(balancer, home, 'q');
    const k = key('c');
    const busy = balancer.run(() => resolveAfter(clock, 1_000, 'busy'), { key: k });
    const waiting = track(balancer.run((shard) => resolveAfter(clock, 1, shard.id), { key: k }));
    await tick(clock, 1);
    expect(waiting.settled).toBe(false);
    void balancer.removeShard('c'); // drains: `busy` finishes on c
    await tick(clock, 5);
    expect(waiting.value).toBe(balancer.homeOf(k));
    expect(waiting.value).not.toBe('c');
    await tick(clock, 1_000);
    await busy;
  });
});

describe("affinity: 'spill' — movement is opt-in, and every move is visible", () => {
  it('under the same burst, displacements happen and each is counted once and evented with its reason and home', async () => {
    const picker = consistentHash({ algorithm: 'maglev', affinity: 'spill' });
    const { clock, balancer, routes } = make(picker);
    const ranOn = await burst(clock, balancer);
    const displacedRoutes = routes.filter((r) => r.reason.startsWith('displaced:'));
    const stats = balancer.stats();
    expect(stats.displaced.total).toBeGreaterThan(0);
    expect(displacedRoutes).toHaveLength(stats.displaced.total);
    expect(stats.displaced.capped).toBe(stats.displaced.total); // nothing failed: the cap moved them
    for (const r of displacedRoutes) {
      expect(r.reason).toBe('displaced:capped');
      expect(r.home).toBeDefined();
      expect(r.home).not.toBe(r.shardId);
    }
    // Per home shard: the same counts, by reason.
    expect(stats.shards.reduce((n, s) => n + s.displaced.capped, 0)).toBe(stats.displaced.capped);
    // A displaced key ran somewhere other than its home; the others on their home.
    let moved = 0;
    for (const [key, shards] of ranOn) if (shards[0] !== balancer.homeOf(key)) moved++;
    expect(moved).toBe(stats.displaced.total);
  });

  it('a retry on another shard is a displacement for reason retry', async () => {
    const picker = consistentHash({ algorithm: 'ring', affinity: 'spill' });
    const { clock, balancer, routes } = make(picker);
    const run = balancer.run(
      (shard, ctx) =>
        ctx.attempt === 1 ? failAfter(clock, 1, new Error('x')) : resolveAfter(clock, 1, shard.id),
      { key: 'k', idempotent: true },
    );
    await tick(clock, 1_000);
    const home = balancer.homeOf('k');
    expect(await run).not.toBe(home);
    expect(routes.map((r) => r.reason)).toEqual(['direct', 'displaced:retry']);
    expect(routes[1]!.home).toBe(home);
    expect(balancer.stats().displaced).toEqual({
      total: 1,
      capped: 0,
      ejected: 0,
      retry: 1,
      bounded: 0,
    });
  });

  it('bounded loads imply spill, and their moves count as bounded', async () => {
    const picker = consistentHash({ algorithm: 'ring', boundedLoad: 1.25 });
    expect(picker.affinity).toBe('spill');
    const { clock, balancer } = make(picker, { maxInFlightPerShard: 1_000 });
    // Every run with the same key: its home fills past the bound, the rest spill.
    const runs = Array.from({ length: 30 }, () =>
      balancer.run(() => resolveAfter(clock, 10, 1), { key: 'hot' }),
    );
    await tick(clock, 20);
    await Promise.all(runs);
    const { displaced } = balancer.stats();
    expect(displaced.bounded).toBeGreaterThan(0);
    expect(displaced.total).toBe(displaced.bounded);
    expect(balancer.stats().spills).toBe(displaced.bounded);
  });
});

describe('rehash', () => {
  it('growing a Maglev table is explicit, and the balancer emits one rehash event with the keys moved', () => {
    const picker = consistentHash({ algorithm: 'maglev' });
    const { balancer } = make(picker);
    const events = recorded(balancer, 'rehash');
    const event = picker.resize(655373);
    expect(events).toEqual([event]);
    expect(event).toMatchObject({ tableSize: 655373, previousTableSize: 65537 });
    expect(event.moved).toBeGreaterThan(0);
    expect(event.moved).toBeLessThan(1);
  });
});
