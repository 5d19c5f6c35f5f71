/**
 * `ordering: 'key'`: the records of one key are written in source order, retries included — one
 * batch per home at a time, a failed batch before any later batch of its home. Checked as a
 * property on virtual time: shards that fail, time out after storing (so a retry stores again),
 * and push back at random; every record of each key first reaches its shard after every earlier
 * record of that key.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, consistentHash, PushBackError, type ShardState } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { fleet, ManualClock, run } from './helpers.js';

interface Keyed {
  id: number;
  key: string;
}

const scenario = fc.record({
  seed: fc.integer({ min: 1, max: 1_000_000 }),
  failRate: fc.double({ min: 0, max: 0.4, noNaN: true }),
  hangRate: fc.double({ min: 0, max: 0.2, noNaN: true }),
  pushBackRate: fc.double({ min: 0, max: 0.3, noNaN: true }),
  keys: fc.integer({ min: 1, max: 12 }),
  maxRecords: fc.integer({ min: 1, max: 20 }),
});

describe("ordering: 'key'", () => {
  it('every key’s records first reach their shard in source order, whatever fails', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const clock = new ManualClock();
        const rnd = seededRandom(s.seed);
        const balancer = fleet(clock, {
          shards: 3,
          picker: consistentHash(),
          timeoutMs: 50,
          retry: { attempts: 1_000, backoff: { baseMs: 1, maxMs: 20 }, budget: false },
          health: { consecutiveFailures: 1_000 },
        });
        const data: Keyed[] = Array.from({ length: 300 }, (_, id) => ({
          id,
          key: `k${Math.floor(rnd() * s.keys)}`,
        }));
        const firstArrival: number[] = [];
        const arrived = new Set<number>();
        const store = (batch: Keyed[]) => {
          for (const r of batch) {
            if (arrived.has(r.id)) continue;
            arrived.add(r.id);
            firstArrival.push(r.id);
          }
        };
        const summary = await run(
          clock,
          balancer.ingest(data, {
            key: (r) => r.key,
            ordering: 'key',
            batch: { maxRecords: s.maxRecords, lingerMs: 2 },
            send: async (_shard: ShardState<string>, batch: Keyed[]) => {
              await new Promise<void>((r) => clock.setTimer(r, 1 + rnd() * 5));
              const roll = rnd();
              if (roll < s.pushBackRate) throw new PushBackError(rnd() * 100);
              if (roll < s.pushBackRate + s.failRate) throw new Error('503');
              store(batch);
              // Stored, and then no answer: the attempt times out and the batch goes again.
              if (roll < s.pushBackRate + s.failRate + s.hangRate) {
                await new Promise<void>((r) => clock.setTimer(r, 10_000));
              }
            },
          }),
          1_000_000,
        );
        expect(summary.written).toBe(data.length);
        // Per key, the first arrivals are in source (id) order.
        const byKey = new Map<string, number[]>();
        const keyOf = new Map(data.map((r) => [r.id, r.key]));
        for (const id of firstArrival) {
          const key = keyOf.get(id)!;
          byKey.set(key, [...(byKey.get(key) ?? []), id]);
        }
        for (const ids of byKey.values()) {
          expect(ids).toEqual([...ids].sort((a, b) => a - b));
        }
        await balancer.close({ drain: false });
      }),
      { numRuns: 25, seed: 20261207 },
    );
  });

  it('needs a keyed picker and a key: a ConfigError otherwise, before a record is read', async () => {
    const clock = new ManualClock();
    const unkeyed = fleet(clock, { shards: 2 });
    let read = 0;
    const source = (function* () {
      read++;
      yield { id: 1, key: 'a' };
    })();
    await expect(
      unkeyed.ingest(source, {
        key: (r) => r.key,
        ordering: 'key',
        batch: {},
        send: async () => {},
      }),
    ).rejects.toThrow(/ordering/);
    // A keyed picker with no `key`: the ingestion cannot route (nor order) by key.
    const keyed = fleet(clock, { shards: 2, picker: consistentHash() });
    await expect(
      keyed.ingest([], { ordering: 'key', batch: {}, send: async () => {} }),
    ).rejects.toThrow(ConfigError);
    expect(read).toBe(0);
  });
});
