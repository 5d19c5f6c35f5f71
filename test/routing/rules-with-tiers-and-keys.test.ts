import { describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../src/base/types.js';
import { consistentHash, peakEwma, type RouteEvent, roundRobin } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { makeBalancer, tick, track } from '../helpers.js';

const SHARDS: ShardSpec<string>[] = [
  { id: 'eu-op', target: 'a', labels: { region: 'eu', site: 'onprem' } },
  { id: 'eu-cl', target: 'b', labels: { region: 'eu', site: 'cloud' } },
  { id: 'us-op', target: 'c', labels: { region: 'us', site: 'onprem' } },
  { id: 'us-cl', target: 'd', labels: { region: 'us', site: 'cloud' } },
  { id: 'ch-x', target: 'e', labels: { region: 'ch' }, zone: 'z1' },
];
const LABELS: Record<string, Record<string, string>> = Object.fromEntries(
  SHARDS.map((s) => [s.id, { ...(s.zone ? { zone: s.zone } : {}), ...s.labels }]),
);

for (const [name, picker] of [
  ['roundRobin', () => roundRobin()],
  ['peakEwma', () => peakEwma()],
  ['consistentHash spill', () => consistentHash({ affinity: 'spill', fallback: roundRobin() })],
  ['consistentHash strict', () => consistentHash({ fallback: roundRobin() })],
] as const) {
  describe(`rules + tiers + retries under ${name}`, () => {
    it('every attempt stays in its rule; route/tiers/labels/shards counters add up', async () => {
      const rnd = seededRandom(7);
      const { clock, balancer } = makeBalancer({
        shards: SHARDS,
        picker: picker(),
        prefer: [{ site: 'onprem' }, { site: 'cloud' }],
        spillAfterMs: 5,
        maxInFlightPerShard: 2,
        random: seededRandom(3),
        retry: { attempts: 3, backoff: { baseMs: 2, maxMs: 4 }, budget: false },
        health: { consecutiveFailures: 3, baseEjectionMs: 50, maxEjectedPercent: 50 },
        timeoutMs: 500,
        policy: (meta) => (meta === 'pii' ? { site: 'onprem' } : undefined),
      });
      const routes: RouteEvent[] = [];
      const _runRule = new Map<number, Record<string, string | readonly string[]> | undefined>();
      balancer.on('route', (e) => routes.push(e));
      const rules = [
        { region: 'eu' },
        { region: ['us', 'ch'] },
        { zone: 'z1' },
        undefined,
        'pii',
      ] as const;
      const outcomes = [];
      let bytesTotal = 0;
      for (let i = 0; i < 200; i++) {
        const r = rules[i % rules.length];
        const bytes = (i % 7) * 10;
        bytesTotal += 0;
        const opts: Record<string, unknown> = { idempotent: true, bytes, key: `k${i % 13}` };
        if (r === 'pii') opts.meta = 'pii';
        else if (r !== undefined) opts.require = r;
        const fail = rnd() < 0.3;
        const dur = 1 + Math.floor(rnd() * 10);
        outcomes.push(
          track(
            balancer.run(
              (shard) =>
                new Promise((resolve, reject) =>
                  clock.setTimer(
                    () => (fail && rnd() < 0.7 ? reject(new Error('boom')) : resolve(shard.id)),
                    dur,
                  ),
                ),
              opts,
            ),
          ),
        );
        if (i % 10 === 9) await tick(clock, 3);
      }
      await tick(clock, 5_000);
      await balancer.drain();
      expect(outcomes.every((o) => o.settled && o.count === 1)).toBe(true);
      // Each route event's shard satisfies its requirement.
      for (const e of routes) {
        const req = e.requirement;
        if (req === undefined) continue;
        for (const [label, allowed] of Object.entries(req)) {
          const list = typeof allowed === 'string' ? [allowed] : allowed;
          expect({
            shard: e.shardId,
            label,
            ok: list.includes(LABELS[e.shardId]![label]!),
          }).toEqual({
            shard: e.shardId,
            label,
            ok: true,
          });
        }
        // pii runs stay on-prem
      }
      const stats = balancer.stats();
      const attempts = routes.length;
      expect(stats.shards.reduce((a, s) => a + s.requests, 0)).toBe(attempts);
      expect(stats.tiers.reduce((a, t) => a + t.requests, 0)).toBe(attempts);
      for (const t of stats.tiers) {
        expect({ tier: t.tier, n: t.requests }).toEqual({
          tier: t.tier,
          n: routes.filter((r) => r.tier === t.tier).length,
        });
      }
      // Tier of each route event is the shard's tier
      const tierOf = (id: string) =>
        LABELS[id]!.site === 'onprem' ? 0 : LABELS[id]!.site === 'cloud' ? 1 : 2;
      for (const e of routes)
        expect({ id: e.shardId, tier: e.tier }).toEqual({ id: e.shardId, tier: tierOf(e.shardId) });
      const region = stats.labels.region!;
      expect(Object.values(region).reduce((a, v) => a + v.requests, 0)).toBe(attempts);
      expect(stats.labels.zone?.z1?.requests ?? 0).toBe(
        routes.filter((r) => r.shardId === 'ch-x').length,
      );
      expect(stats.completed + stats.failed).toBe(200);
      void bytesTotal;
      await balancer.close();
    });
  });
}
