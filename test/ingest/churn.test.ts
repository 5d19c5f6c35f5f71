/**
 * Probes of ingestion promises: exactly-once accounting under churn, odd send behaviour.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, type IngestError, type ShardState } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, type Rec, records, settle } from './helpers.js';

describe('exactly once under churn (seeded)', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`seed ${seed}: keyed batches, refusals, throws, membership churn, close at the end`, async () => {
      const clock = new ManualClock();
      const rnd = seededRandom(seed);
      const balancer = fleet(clock, {
        shards: 4,
        picker: consistentHash(),
        maxInFlightPerShard: 2,
        maxQueued: 20,
        random: seededRandom(seed + 100),
      });
      const N = 300;
      const sendCount = new Map<number, number>();
      const writtenBy = new Map<number, number>();
      const failedAt = new Map<number, number>();
      const failedTwice: number[] = [];
      const sentAfterFail: number[] = [];
      let step = 0;
      const ids = ['a', 'b', 'c', 'd'];
      const ingestion = balancer.ingest(
        records(N, (i) => `k${i % 37}`),
        {
          key: (r) => r.key,
          batch: { maxRecords: 8, lingerMs: 3, retry: { attempts: 3, budget: false } },
          onFailed: (r) => {
            if (failedAt.has(r.id)) failedTwice.push(r.id);
            failedAt.set(r.id, clock.now());
          },
          send: async (shard: ShardState<string>, batch: Rec[]) => {
            const snapshot = [...batch];
            for (const r of snapshot) {
              sendCount.set(r.id, (sendCount.get(r.id) ?? 0) + 1);
              if (failedAt.has(r.id)) sentAfterFail.push(r.id);
            }
            step++;
            if (step % 7 === 0) {
              const present = balancer.shards.map((s) => s.id);
              const missing = ids.filter((i) => !present.includes(i));
              if (missing.length > 0 && rnd() < 0.6) {
                balancer.addShard({ id: missing[0]!, target: missing[0]! });
              } else if (present.length > 1) {
                void balancer.removeShard(present[Math.floor(rnd() * present.length)]!, {
                  drain: rnd() < 0.5,
                });
              }
            }
            await resolveAfter(clock, 1 + Math.floor(rnd() * 5), undefined);
            const roll = rnd();
            if (roll < 0.1) throw new Error(`boom on ${shard.id}`);
            const failed: { index: number; retryable: boolean }[] = [];
            snapshot.forEach((_, index) => {
              if (rnd() < 0.2) failed.push({ index, retryable: rnd() < 0.8 });
            });
            for (let i = 0; i < snapshot.length; i++) {
              if (!failed.some((f) => f.index === i)) {
                const id = snapshot[i]!.id;
                writtenBy.set(id, (writtenBy.get(id) ?? 0) + 1);
              }
            }
            return { failed };
          },
        },
      );
      const outcome = await settle(clock, ingestion, 200_000);
      expect(outcome.ok).toBe(true);
      const s = (outcome as { value: { written: number; failed: number } }).value;
      expect(s.written + s.failed).toBe(N);
      expect(failedTwice).toEqual([]);
      expect(sentAfterFail).toEqual([]);
      expect(failedAt.size).toBe(s.failed);
    });
  }
});

describe('stops mid-ingest', () => {
  it('close({ drain: false }) during a record retry backoff: every record settles once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const failedIds: number[] = [];
    const writtenIds: number[] = [];
    let closed = false;
    const ingestion = balancer.ingest(records(30), {
      batch: { maxRecords: 10, lingerMs: 2, retry: { backoff: { baseMs: 1000, maxMs: 1000 } } },
      onFailed: (r) => failedIds.push(r.id),
      send: async (_s: ShardState<string>, batch: Rec[]) => {
        if (closed) throw new Error('sent after close');
        await resolveAfter(clock, 1, undefined);
        const failed = batch.map((r, index) => ({ index, r })).filter(({ r }) => r.id % 3 === 0);
        batch.forEach((r) => {
          if (r.id % 3 !== 0) writtenIds.push(r.id);
        });
        if (!closed) {
          closed = true;
          clock.setTimer(() => void balancer.close({ drain: false }), 5);
        }
        return { failed: failed.map(({ index }) => ({ index })) };
      },
    });
    const outcome = await settle(clock, ingestion, 50_000);
    if (!outcome.ok) console.log('error', outcome.error);
    const summary = outcome.ok ? outcome.value : (outcome.error as IngestError<Rec>).summary;
    expect(summary.written + summary.failed).toBe(30);
    expect(new Set(failedIds).size).toBe(failedIds.length);
    expect(failedIds.filter((id) => writtenIds.includes(id))).toEqual([]);
  });

  it('setShards([]) mid-ingest then shards back: ingest settles, every record once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let n = 0;
    const ingestion = balancer.ingest(records(60), {
      batch: { maxRecords: 10, lingerMs: 2 },
      send: async (_s: ShardState<string>, _batch: Rec[]) => {
        n++;
        if (n === 2) {
          void balancer.setShards([]);
          clock.setTimer(() => void balancer.setShards([{ id: 'z', target: 'z' }]), 500);
        }
        await resolveAfter(clock, 3, undefined);
      },
    });
    const outcome = await settle(clock, ingestion, 50_000);
    const summary = outcome.ok ? outcome.value : (outcome.error as IngestError<Rec>).summary;
    expect(summary.written + summary.failed).toBe(60);
    const perShardSum = Object.values(summary.perShard).reduce((a, b) => a + b, 0);
    expect(perShardSum).toBe(summary.written);
  });

  it('abort during a linger timer with an async source: settles, records accounted', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const controller = new AbortController();
    async function* source(): AsyncGenerator<Rec> {
      for (let id = 0; id < 5; id++) yield { id };
      await resolveAfter(clock, 10_000, undefined);
      yield { id: 99 };
    }
    clock.setTimer(() => controller.abort('stop'), 3);
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        batch: { maxRecords: 10, lingerMs: 100 },
        send: async () => {
          await resolveAfter(clock, 1, undefined);
        },
        signal: controller.signal,
      }),
      50_000,
    );
    expect(outcome.ok).toBe(false);
    const { summary, kind } = (outcome as { error: IngestError<Rec> }).error;
    expect(kind).toBe('aborted');
    expect(summary.written).toBe(5);
  });
});
