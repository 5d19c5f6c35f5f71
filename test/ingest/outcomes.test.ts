/**
 * Three outcomes, told as they are: a record ends `written`, `failed` (known not stored) or
 * `uncertain` (sent, no answer); re-sends after an uncertain send are counted (`resent`); every
 * batch carries an id that stays the same across its retries and changes when records leave it.
 */
import { describe, expect, it } from 'vitest';
import {
  type BatchContext,
  RetriesExhaustedError,
  type ShardState,
  UncertainWriteError,
} from '../../src/index.js';
import { fleet, ManualClock, type Rec, records, run } from './helpers.js';

/** A send that hangs past the attempt's deadline on its `n`-th call (so it times out). */
const hang = (clock: ManualClock) => new Promise<void>((r) => clock.setTimer(r, 60_000));

describe('uncertain records', () => {
  it('a timeout after the send, not idempotent: uncertain, not failed; onUncertain hears of each', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, timeoutMs: 100 });
    const uncertain: number[] = [];
    const failed: number[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(10), {
        idempotent: false,
        batch: { maxRecords: 5 },
        onUncertain: (r) => uncertain.push(r.id),
        onFailed: (r) => failed.push(r.id),
        send: () => hang(clock),
      }),
      200_000,
    );
    expect(summary).toMatchObject({ written: 0, failed: 0, uncertain: 10, resent: 0 });
    expect(uncertain.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(failed).toEqual([]);
    for (const { error } of summary.failures) {
      expect(error).toBeInstanceOf(UncertainWriteError);
      expect((error as UncertainWriteError).uncertain).toBe(true);
      expect((error as UncertainWriteError).shardId).toBe('a');
    }
  });

  it('without onUncertain, onFailed hears of them, their error saying uncertain', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, timeoutMs: 100 });
    const heard: unknown[] = [];
    await run(
      clock,
      balancer.ingest(records(2), {
        idempotent: false,
        batch: { maxRecords: 2 },
        onFailed: (_r, error) => heard.push(error),
        send: () => hang(clock),
      }),
      200_000,
    );
    expect(heard).toHaveLength(2);
    for (const error of heard) expect((error as { uncertain?: boolean }).uncertain).toBe(true);
  });

  it('retried after a timeout (idempotent, the default): written, each re-send counted in resent', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2, timeoutMs: 100 });
    const stored = new Map<number, number>();
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(20), {
        batch: { maxRecords: 10 },
        send: async (_shard: ShardState<string>, batch: Rec[]) => {
          // Every batch is stored, but the first send of each gets no answer.
          for (const r of batch) stored.set(r.id, (stored.get(r.id) ?? 0) + 1);
          if (++sends <= 2) await hang(clock);
        },
      }),
      200_000,
    );
    const duplicates = [...stored.values()].reduce((sum, n) => sum + n - 1, 0);
    expect(summary).toMatchObject({ written: 20, failed: 0, uncertain: 0 });
    expect(summary.resent).toBe(duplicates);
    expect(duplicates).toBe(20);
  });

  it('a send refused after an uncertain one leaves the record uncertain (the first may be stored)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 1,
      timeoutMs: 100,
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(1), {
        batch: { maxRecords: 1 },
        send: async () => {
          if (++sends === 1) return hang(clock);
          throw Object.assign(new Error('503 busy'), { retryable: true });
        },
      }),
      200_000,
    );
    expect(summary).toMatchObject({ written: 0, failed: 0, uncertain: 1, resent: 1 });
    const error = summary.failures[0]!.error as UncertainWriteError;
    expect(error.cause).toBeInstanceOf(RetriesExhaustedError);
  });

  it('a send that proves it never left is failed, not uncertain', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, retry: false });
    const summary = await run(
      clock,
      balancer.ingest(records(3), {
        batch: { maxRecords: 3 },
        send: async () => {
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        },
      }),
    );
    expect(summary).toMatchObject({ written: 0, failed: 3, uncertain: 0 });
  });

  it('one record per run: a timed-out send is uncertain too', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, timeoutMs: 50 });
    const summary = await run(
      clock,
      balancer.ingest(records(3), { idempotent: false, send: () => hang(clock) }),
      200_000,
    );
    expect(summary).toMatchObject({ written: 0, failed: 0, uncertain: 3 });
  });
});

describe('batch ids', () => {
  it('stay the same across the retries of a batch, and differ between batches', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 2,
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    const seen: [string, number[]][] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(6), {
        batch: { maxRecords: 3 },
        send: async (_shard: ShardState<string>, batch: Rec[], ctx: BatchContext) => {
          seen.push([ctx.batchId, batch.map((r) => r.id)]);
          if (seen.filter(([id]) => id === ctx.batchId).length < 3) throw new Error('again');
        },
      }),
    );
    expect(summary.written).toBe(6);
    const ids = new Map<string, string>();
    for (const [id, recs] of seen) {
      const before = ids.get(id);
      if (before !== undefined) expect(recs.join()).toBe(before);
      ids.set(id, recs.join());
    }
    expect(ids.size).toBe(2); // two batches, each sent three times under one id
    expect(seen).toHaveLength(6);
    for (const id of ids.keys()) expect(id).toMatch(/^[0-9a-f]{16}-[0-9a-z]+$/);
  });

  it('change when records leave a batch (the refused ones go again under a new id)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 1,
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    const sends: [string, number[]][] = [];
    await run(
      clock,
      balancer.ingest(records(4), {
        batch: { maxRecords: 4 },
        send: async (_shard: ShardState<string>, batch: Rec[], ctx: BatchContext) => {
          sends.push([ctx.batchId, batch.map((r) => r.id)]);
          return sends.length === 1 ? { failed: [{ index: 1 }, { index: 3 }] } : undefined;
        },
      }),
    );
    expect(sends.map(([, recs]) => recs)).toEqual([
      [0, 1, 2, 3],
      [1, 3],
    ]);
    expect(sends[1]![0]).not.toBe(sends[0]![0]);
  });

  it('are drawn from the balancer’s random source: the same seed, the same ids', async () => {
    const idsOf = async () => {
      const clock = new ManualClock();
      const balancer = fleet(clock, { shards: 1 });
      const ids: string[] = [];
      await run(
        clock,
        balancer.ingest(records(4), {
          batch: { maxRecords: 2 },
          send: async (_s: ShardState<string>, _b: Rec[], ctx: BatchContext) => {
            ids.push(ctx.batchId);
          },
        }),
      );
      return ids;
    };
    expect(await idsOf()).toEqual(await idsOf());
  });
});
