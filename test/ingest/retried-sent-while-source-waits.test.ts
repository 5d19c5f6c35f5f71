/**
 * "When the source must wait for room (the held bounds), every open batch is sent, full or not"
 * (docs/batching.md). Records placed in open batches *while* the source already waits (retries
 * coming back from backoff) must not sit out their linger either.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, type ShardState } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, run } from './helpers.js';

interface KRec {
  id: number;
  key: string;
}

describe('records retried while the source waits for room', () => {
  it('are sent at once, not after their linger (the source is blocked on them)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 4, picker: consistentHash() });
    // Two keys with different homes: their records never share a batch.
    const keys: string[] = [];
    const homes = new Set<string>();
    for (let i = 0; i < 1_000 && keys.length < 2; i++) {
      const home = balancer.homeOf(`k${i}`)!;
      if (!homes.has(home)) {
        homes.add(home);
        keys.push(`k${i}`);
      }
    }
    const recs: KRec[] = [
      { id: 0, key: keys[0]! },
      { id: 1, key: keys[1]! },
      { id: 2, key: keys[0]! },
    ];
    const seen = new Set<number>();
    const writtenAt: number[] = [];
    const summary = await run(
      clock,
      balancer.ingest(recs, {
        key: (r) => r.key,
        batch: {
          maxRecords: 2,
          maxHeldRecords: 2,
          lingerMs: 10_000,
          retry: { backoff: { baseMs: 1, maxMs: 1 }, budget: false },
        },
        send: async (_shard: ShardState<string>, batch: KRec[]) => {
          await resolveAfter(clock, 1, undefined);
          // Each record is refused on its first send, written on its second.
          const failed = batch.flatMap((r, index) => (seen.has(r.id) ? [] : [{ index }]));
          for (const r of batch) {
            if (seen.has(r.id)) writtenAt.push(clock.now());
            seen.add(r.id);
          }
          return { failed };
        },
      }),
      100_000,
    );
    expect(summary.written + summary.failed).toBe(3);
    expect(summary.written).toBe(3);
    // Two held records, both backing off, the source waiting for room: nothing else can free
    // it, so their retries must go at once (a few ms), not after lingerMs (10 s).
    expect(Math.min(...writtenAt)).toBeLessThan(1_000);
    expect(summary.durationMs).toBeLessThan(1_000);
  });
});
