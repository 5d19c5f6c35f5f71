/**
 * Red-team attacks: bounded loads exact, displacement accounting, homes under membership change.
 */
import { describe, expect, it } from 'vitest';
import {
  type ConsistentHashPicker,
  consistentHash,
  MissingKeyError,
  roundRobin,
  ShardUnavailableError,
} from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
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

function make(
  picker: ConsistentHashPicker,
  options: TestBalancerOptions<string> = {},
  ids: string[] = ['a', 'b', 'c', 'd'],
) {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(ids),
    picker,
    random: seededRandom(7),
    ...options,
  });
  const routes = recorded(balancer, 'route');
  return { clock, balancer, routes };
}

describe('bounded loads: the bound is exact and never exceeded', () => {
  for (const c of [1, 1.0001, 1.25, 2]) {
    for (const algorithm of ['ring', 'maglev', 'rendezvous'] as const) {
      it(`${algorithm} c=${c}: every start keeps its shard at or below ceil(c × total / n)`, async () => {
        const picker = consistentHash({ algorithm, boundedLoad: c });
        const { clock, balancer, routes } = make(picker, {
          maxInFlightPerShard: 100_000,
          retry: { attempts: 1 },
        });
        const rnd = seededRandom(11);
        const violations: string[] = [];
        const runs: Promise<unknown>[] = [];
        for (let wave = 0; wave < 30; wave++) {
          for (let i = 0; i < 40; i++) {
            // Skewed keys: a few hot ones and many cold ones.
            const key =
              rnd() < 0.5 ? `hot-${Math.floor(rnd() * 3)}` : `cold-${Math.floor(rnd() * 1000)}`;
            runs.push(
              balancer.run(
                (shard) => {
                  let total = 0;
                  for (const s of balancer.shards) total += s.inFlight;
                  const bound = Math.ceil((c * total) / balancer.shards.length);
                  if (shard.inFlight > bound)
                    violations.push(`${shard.id} ${shard.inFlight} > ${bound} (total ${total})`);
                  return resolveAfter(clock, 1 + Math.floor(rnd() * 50), 1);
                },
                { key },
              ),
            );
          }
          await tick(clock, 5);
        }
        await tick(clock, 1_000);
        await Promise.all(runs);
        expect(violations).toEqual([]);
        const s = balancer.stats();
        expect(s.completed).toBe(1200);
        // Every displacement is bounded (nothing capped, ejected or retried here).
        expect(s.displaced.total).toBe(s.displaced.bounded);
        expect(s.displaced.total).toBe(routes.filter((r) => r.reason !== 'direct').length);
        expect(s.shards.reduce((n, sh) => n + sh.displaced.total, 0)).toBe(s.displaced.total);
        expect(s.spills).toBe(s.displaced.bounded);
        expect(s.displaced.bounded).toBeGreaterThan(0);
        for (const r of routes) {
          if (r.reason === 'displaced:bounded') expect(r.home).not.toBe(r.shardId);
          else expect(r.home).toBe(r.shardId);
        }
      });
    }
  }
});

describe('spill: capped home and capped next candidate', () => {
  it('goes to the third shard of the key order, counted once as capped with its home', async () => {
    const picker = consistentHash({ algorithm: 'rendezvous', affinity: 'spill' });
    const { clock, balancer, routes } = make(picker, { maxInFlightPerShard: 1 });
    const home = balancer.homeOf('k')!;
    // The key's order: home, then the home of the key among the rest, etc.
    const rest = balancer.shards.filter((s) => s.id !== home);
    const second = picker.home(rest, 'k')!.id;
    const third = picker.home(
      rest.filter((s) => s.id !== second),
      'k',
    )!.id;
    const holdHome = track(balancer.run(() => resolveAfter(clock, 100, 0), { key: 'k' }));
    const holdSecond = track(balancer.run(() => resolveAfter(clock, 100, 0), { key: 'k' }));
    const ran = track(balancer.run(async (s) => s.id, { key: 'k' }));
    await tick(clock, 1);
    expect(ran.value).toBe(third);
    expect(routes.map((r) => [r.shardId, r.reason, r.home])).toEqual([
      [home, 'direct', home],
      [second, 'displaced:capped', home],
      [third, 'displaced:capped', home],
    ]);
    const s = balancer.stats();
    expect(s.displaced).toEqual({ total: 2, capped: 2, ejected: 0, retry: 0, bounded: 0 });
    expect(s.shards.find((x) => x.id === home)!.displaced).toEqual({
      total: 2,
      capped: 2,
      ejected: 0,
      retry: 0,
      bounded: 0,
    });
    expect(s.spills).toBe(0);
    await tick(clock, 200);
    expect(holdHome.ok && holdSecond.ok).toBe(true);
  });

  it('spill: every shard capped — the run waits, then runs on the first shard to free up, counted capped once', async () => {
    const picker = consistentHash({ algorithm: 'ring', affinity: 'spill' });
    const { clock, balancer, routes } = make(picker, { maxInFlightPerShard: 1 }, ['a', 'b']);
    const home = balancer.homeOf('k')!;
    const other = home === 'a' ? 'b' : 'a';
    // Hold the home for 100 ms and the other for 10 ms (with keys of their own).
    const keyOn = (id: string) => keyHomedOn(balancer, id, 'x');
    track(balancer.run(() => resolveAfter(clock, 100, 0), { key: keyOn(home) }));
    track(balancer.run(() => resolveAfter(clock, 10, 0), { key: keyOn(other) }));
    const ran = track(balancer.run(async (s) => s.id, { key: 'k' }));
    await tick(clock, 1);
    expect(ran.settled).toBe(false);
    await tick(clock, 20);
    expect(ran.value).toBe(other);
    expect(routes[2]).toMatchObject({ shardId: other, reason: 'displaced:capped', home });
    expect(balancer.stats().displaced).toEqual({
      total: 1,
      capped: 1,
      ejected: 0,
      retry: 0,
      bounded: 0,
    });
    await tick(clock, 200);
  });
});

describe('spill: ejected home', () => {
  it('a run while the home is ejected is displaced:ejected, with the home; strict stays 0', async () => {
    const picker = consistentHash({ algorithm: 'maglev', affinity: 'spill' });
    const { clock, balancer, routes } = make(picker, {
      health: { consecutiveFailures: 1, maxEjectedPercent: 50 },
      retry: { attempts: 1 },
    });
    const home = balancer.homeOf('k')!;
    const f = track(balancer.run(() => failAfter(clock, 1, new Error('x')), { key: 'k' }));
    await tick(clock, 2);
    expect(f.ok).toBe(false);
    expect(balancer.stats().shards.find((s) => s.id === home)!.ejected).toBe(true);
    routes.length = 0;
    const ran = await balancer.run(async (s) => s.id, { key: 'k' });
    expect(ran).not.toBe(home);
    expect(routes[0]).toMatchObject({ reason: 'displaced:ejected', home, shardId: ran });
    expect(balancer.stats().displaced).toEqual({
      total: 1,
      capped: 0,
      ejected: 1,
      retry: 0,
      bounded: 0,
    });
  });
});

describe('homeOf and membership changes', () => {
  it('homeOf follows a weight change made by setShards, and strict runs go where homeOf says', async () => {
    for (const algorithm of ['ring', 'maglev', 'rendezvous'] as const) {
      const picker = consistentHash({ algorithm });
      const { balancer } = make(picker);
      const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
      const before = keys.map((k) => balancer.homeOf(k));
      await balancer.setShards([
        { id: 'a', target: 'a', weight: 10 },
        { id: 'b', target: 'b' },
        { id: 'c', target: 'c' },
        { id: 'd', target: 'd' },
      ]);
      const after = keys.map((k) => balancer.homeOf(k));
      expect(after.filter((h) => h === 'a').length).toBeGreaterThan(
        before.filter((h) => h === 'a').length,
      );
      for (const k of keys.slice(0, 50)) {
        const ran = await balancer.run(async (s) => s.id, { key: k });
        expect(ran, `${algorithm} ${k}`).toBe(balancer.homeOf(k));
      }
    }
  });
});

describe('keyless runs under a keyed picker', () => {
  it('with a fallback, keyless runs under strict affinity use the fallback and are never displaced', async () => {
    const picker = consistentHash({ fallback: roundRobin() });
    const { balancer, routes } = make(picker);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await balancer.run(async (s) => s.id));
    expect(ids).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd']);
    expect(routes.every((r) => r.reason === 'direct' && r.home === undefined)).toBe(true);
    expect(balancer.stats().displaced.total).toBe(0);
  });

  it('without a fallback, a keyless run rejects with MissingKeyError, settled once and counted once', async () => {
    const picker = consistentHash();
    const { clock, balancer } = make(picker);
    const out = track(balancer.run(async () => 1));
    await tick(clock, 1);
    expect(out.count).toBe(1);
    expect(out.error).toBeInstanceOf(MissingKeyError);
    const s = balancer.stats();
    expect(s.completed + s.failed + s.refused).toBe(1);
  });
});

describe('strict keyed runs and rules', () => {
  it('a strict keyed run whose rule excludes its home never reaches a shard outside the rule', async () => {
    const { balancer } = makeBalancer({
      shards: [
        { id: 'fra', target: 'fra', labels: { region: 'eu' } },
        { id: 'ams', target: 'ams', labels: { region: 'eu' } },
        { id: 'iad', target: 'iad', labels: { region: 'us' } },
        { id: 'sfo', target: 'sfo', labels: { region: 'us' } },
      ],
      picker: consistentHash(),
    });
    const key = keyHomedOn(balancer, 'iad');
    const routes = recorded(balancer, 'route');
    const ran = await balancer.run(async (s) => s.id, { key, require: { region: 'eu' } });
    expect(['fra', 'ams']).toContain(ran);
    expect(routes[0]!.home).toBe(ran);
    expect(balancer.stats().displaced.total).toBe(0);
  });

  it('strict: a keyed run whose home stays ejected rejects with ShardUnavailableError naming the home, counted as failed', async () => {
    const picker = consistentHash();
    const { clock, balancer } = make(picker, {
      health: { consecutiveFailures: 1, maxEjectedPercent: 50 },
      retry: { attempts: 1 },
      // Its delivery deadline passes before the first early probe (250 ms) would let it try.
      deliveryTimeoutMs: 100,
    });
    const home = balancer.homeOf('k')!;
    track(balancer.run(() => failAfter(clock, 1, new Error('x')), { key: 'k' }));
    await tick(clock, 2);
    const out = track(balancer.run(async (s) => s.id, { key: 'k' }));
    await tick(clock, 150);
    expect(out.error).toBeInstanceOf(ShardUnavailableError);
    expect((out.error as ShardUnavailableError).shardId).toBe(home);
    expect(balancer.stats().failed).toBe(2);
  });
});
