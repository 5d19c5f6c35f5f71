/**
 * A heartbeat: `onProgress` is called at least every `progressMs` while the ingestion runs —
 * stalls included — saying what each shard holds and why it waits.
 */
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  consistentHash,
  type IngestProgress,
  PushBackError,
  type ShardState,
} from '../../src/index.js';
import { fleet, ManualClock, type Rec, run } from './helpers.js';

describe('onProgress', () => {
  it('is called at least once per progressMs through a 10 s stall, and says why each shard waits', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 2,
      picker: consistentHash(),
      health: { consecutiveFailures: 1, baseEjectionMs: 600_000 },
    });
    const data: Rec[] = Array.from({ length: 400 }, (_, id) => ({ id, key: `t${id % 16}` }));
    const stalled = balancer.homeOf(data[0]!.key!)!;
    const reports: [number, IngestProgress][] = [];
    const ingestion = balancer.ingest(data, {
      key: (r) => r.key,
      progressMs: 500,
      batch: { maxRecords: 10, lingerMs: 5 },
      onProgress: (p) => reports.push([clock.now(), p]),
      send: async (shard: ShardState<string>) => {
        await new Promise<void>((r) => clock.setTimer(r, 1));
        // The stalled home refuses every connection for 10 s: no record settles there meanwhile.
        if (shard.id === stalled && clock.now() < 10_000) {
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        }
      },
    });
    const summary = await run(clock, ingestion, 60_000);
    expect(summary.written).toBe(400);
    // Between 1 s and 10 s nothing settles, yet every 500 ms brings a report.
    const during = reports.filter(([t]) => t >= 1_000 && t <= 10_000).map(([t]) => t);
    expect(during.length).toBeGreaterThanOrEqual(18);
    for (let i = 1; i < during.length; i++) {
      expect(during[i]! - during[i - 1]!).toBeLessThanOrEqual(500);
    }
    // The reports say the stalled shard's records wait because it is ejected.
    const mid = reports.find(([t]) => t >= 5_000)![1];
    expect(mid.shards[stalled]!.waiting).toBe('ejected');
    expect(mid.shards[stalled]!.held).toBeGreaterThan(0);
    expect(mid.shards[stalled]!.written).toBe(0);
    const other = Object.keys(mid.shards).find((id) => id !== stalled)!;
    expect(mid.shards[other]!.waiting).toBeUndefined();
    // The last report is the final one.
    expect(reports.at(-1)![1].written).toBe(400);
  });

  it('says pushBack for a shard that pushes back', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    const reports: IngestProgress[] = [];
    await run(
      clock,
      balancer.ingest(
        Array.from({ length: 20 }, (_, id) => ({ id })),
        {
          progressMs: 100,
          batch: { maxRecords: 10 },
          onProgress: (p) => reports.push(p),
          send: async () => {
            if (clock.now() < 1_000) throw new PushBackError(1_000);
          },
        },
      ),
      10_000,
    );
    expect(reports.some((p) => p.shards.a?.waiting === 'pushBack')).toBe(true);
  });

  it('progressMs and progressIntervalMs are one option under two names: both at once is a ConfigError', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    await expect(
      balancer.ingest([], { send: async () => {}, progressMs: 10, progressIntervalMs: 10 }),
    ).rejects.toThrow(ConfigError);
    await expect(balancer.ingest([], { send: async () => {}, progressMs: 0 })).rejects.toThrow(
      /progressMs/,
    );
  });
});
