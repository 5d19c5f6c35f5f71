/**
 * Keyed records batch per home shard: under `consistentHash()` (strict affinity) a batch never
 * mixes homes, so every record lands on its key's home — also when the membership changes while
 * batches wait. Unkeyed records fill one batch at a time, and the picker chooses where each batch
 * goes when it runs: a slow shard gets fewer batches, not smaller ones (KIP-480, KIP-794).
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, peakEwma, type ShardState } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, type Rec, records, run } from './helpers.js';

const tenant = (id: number) => `tenant-${(id * 7919) % 97}`;

describe('keyed batches', () => {
  it('never mix homes: every record is sent to its key’s home shard', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 4, picker: consistentHash() });
    const landed = new Map<number, string>();
    const mixed: string[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(2_000, tenant), {
        key: (r) => r.key,
        batch: { maxRecords: 16, lingerMs: 3 },
        send: async (shard: ShardState<string>, batch: Rec[]) => {
          for (const r of batch) {
            if (balancer.homeOf(r.key!) !== shard.id) mixed.push(`${r.id}→${shard.id}`);
            expect(landed.has(r.id)).toBe(false);
            landed.set(r.id, shard.id);
          }
          await resolveAfter(clock, 2, undefined);
        },
      }),
    );
    expect(mixed).toEqual([]);
    expect(landed.size).toBe(2_000);
    expect(summary.written).toBe(2_000);
    // Every home got its own records: the per-shard counts are the homes' counts.
    const homes: Record<string, number> = {};
    for (const r of records(2_000, tenant)) {
      const home = balancer.homeOf(r.key!)!;
      homes[home] = (homes[home] ?? 0) + 1;
    }
    expect(summary.perShard).toEqual(homes);
    expect(Object.keys(homes)).toHaveLength(4);
  });

  it('re-checks homes when the membership changed while a batch waited', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 4,
      picker: consistentHash(),
      maxInFlightPerShard: 1,
      maxQueued: 1_000,
    });
    const sends: { shard: string; keys: string[] }[] = [];
    const mixed: string[] = [];
    let removed = false;
    const ingestion = balancer.ingest(records(600, tenant), {
      key: (r) => r.key,
      batch: { maxRecords: 10, lingerMs: 1 },
      send: async (shard: ShardState<string>, batch: Rec[]) => {
        sends.push({ shard: shard.id, keys: batch.map((r) => r.key!) });
        for (const r of batch) {
          if (balancer.homeOf(r.key!) !== shard.id) mixed.push(`${r.id}→${shard.id}`);
        }
        if (!removed && sends.length === 5) {
          removed = true;
          // Batches for every home are waiting now; shard c leaves, its keys move.
          void balancer.removeShard('c');
        }
        await resolveAfter(clock, 20, undefined);
      },
    });
    const summary = await run(clock, ingestion);
    expect(removed).toBe(true);
    expect(mixed).toEqual([]);
    expect(summary.written).toBe(600);
    expect(summary.failed).toBe(0);
    const sentKeys = sends.flatMap((s) => s.keys);
    expect(sentKeys).toHaveLength(600); // each record sent once, none lost in the move
    const afterRemoval = sends.slice(5);
    expect(afterRemoval.some((s) => s.shard === 'c')).toBe(false);
  });

  it('unkeyed: a slow shard gets fewer batches, each as full as the others', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 3,
      picker: peakEwma(),
      maxInFlightPerShard: 2,
      maxQueued: 4,
    });
    const sizes: Record<string, number[]> = { a: [], b: [], c: [] };
    await run(
      clock,
      balancer.ingest(records(6_000), {
        batch: { maxRecords: 50, lingerMs: 1_000 },
        send: async (shard: ShardState<string>, batch: Rec[]) => {
          sizes[shard.id]!.push(batch.length);
          await resolveAfter(clock, shard.id === 'b' ? 50 : 5, undefined);
        },
      }),
    );
    const all = Object.values(sizes).flat();
    expect(all.reduce((a, b) => a + b, 0)).toBe(6_000);
    // Every batch is full (6 000 is a multiple of 50): the slow shard's too.
    expect(all.every((n) => n === 50)).toBe(true);
    expect(sizes.b!.length).toBeGreaterThan(0);
    expect(sizes.b!.length * 3).toBeLessThan(sizes.a!.length);
    expect(sizes.b!.length * 3).toBeLessThan(sizes.c!.length);
  });
});
