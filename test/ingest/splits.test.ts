/**
 * Poison records are isolated, not multiplied: a batch whose data is refused is split in halves,
 * down to the records that fail on their own; a 413 splits at once without spending an attempt;
 * a record too large alone fails with its own error; a definitive refusal is retried nowhere and
 * charges no shard's health; and a shard that refuses everything costs a bounded number of
 * splits, not a request per record.
 */
import { describe, expect, it } from 'vitest';
import { RecordTooLargeError, type ShardState } from '../../src/index.js';
import { SPLITS_FLOOR } from '../../src/ingest/sender.js';
import { fleet, ManualClock, type Rec, records, run } from './helpers.js';

/** An answer with a status, as `HttpError` carries it (4xx: not retryable). */
function answer(statusCode: number): Error {
  return Object.assign(new Error(`HTTP ${statusCode}`), {
    statusCode,
    retryable: statusCode >= 500,
  });
}

describe('a refused batch', () => {
  it('one malformed record in 20 000 (batches of 5 000): 19 999 written, 1 failed, ≤ 30 extra sends', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 4, maxInFlightPerShard: 4 });
    const bad = 12_345;
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(20_000), {
        batch: { maxRecords: 5_000, maxHeldRecords: 20_000 },
        send: async (_shard: ShardState<string>, batch: Rec[]) => {
          sends++;
          if (batch.some((r) => r.id === bad)) throw answer(400);
        },
      }),
    );
    expect(summary.written).toBe(19_999);
    expect(summary.failed).toBe(1);
    expect(summary.failures[0]!.record.id).toBe(bad);
    expect((summary.failures[0]!.error as { statusCode: number }).statusCode).toBe(400);
    expect(sends - 4).toBeLessThanOrEqual(30);
    // A definitive refusal is the data's fault: no shard was charged for it.
    for (const shard of balancer.stats().shards) {
      expect(shard.ejections).toBe(0);
      expect(shard.ejected).toBe(false);
    }
  });

  it('a 413 splits at once, spending no attempt: every record is written with retries off', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, retry: false });
    const sizes: number[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(64), {
        batch: { maxRecords: 64 },
        send: async (_shard: ShardState<string>, batch: Rec[]) => {
          sizes.push(batch.length);
          if (batch.length > 8) throw answer(413);
        },
      }),
    );
    expect(summary.written).toBe(64);
    // 64 → two 32s → four 16s → eight 8s, each written: one send per node of the tree.
    expect(sizes.sort((a, b) => b - a)).toEqual([
      64, 32, 32, 16, 16, 16, 16, 8, 8, 8, 8, 8, 8, 8, 8,
    ]);
  });

  it('a record too large alone fails with RecordTooLargeError naming its shard and size', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    const summary = await run(
      clock,
      balancer.ingest([{ id: 1 }, { id: 2, big: 'x'.repeat(1_000) }, { id: 3 }], {
        batch: { maxRecords: 3 },
        send: async (_shard: ShardState<string>, batch: { id: number; big?: string }[]) => {
          if (batch.some((r) => r.big !== undefined)) {
            throw Object.assign(answer(413), { shardId: 'a' });
          }
        },
      }),
    );
    expect(summary.written).toBe(2);
    expect(summary.failed).toBe(1);
    const error = summary.failures[0]!.error as RecordTooLargeError;
    expect(error).toBeInstanceOf(RecordTooLargeError);
    expect(error.shardId).toBe('a');
    expect(error.bytes).toBeGreaterThan(1_000);
  });

  it('an error that says `rejected: true` is split too (a custom send reading a 500 as bad data)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    const summary = await run(
      clock,
      balancer.ingest(records(100), {
        batch: { maxRecords: 100 },
        send: async (_shard: ShardState<string>, batch: Rec[]) => {
          if (batch.some((r) => r.id === 42)) {
            throw Object.assign(new Error('Cannot parse input'), {
              rejected: true,
              retryable: false,
            });
          }
        },
      }),
    );
    expect(summary.written).toBe(99);
    expect(summary.failures.map((f) => f.record.id)).toEqual([42]);
  });

  it('a shard that refuses everything costs a bounded number of splits, not a request per record', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(10_000), {
        batch: { maxRecords: 500 },
        send: async () => {
          sends++;
          throw answer(400);
        },
      }),
    );
    expect(summary.failed).toBe(10_000);
    // 20 batches, then two sends per split, at most SPLITS_FLOOR splits with nothing written.
    expect(sends).toBeLessThanOrEqual(20 + 2 * SPLITS_FLOOR);
  });

  it('other 4xx (401, 404) fail the batch as it is, unsplit and unretried', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(100), {
        batch: { maxRecords: 50 },
        send: async () => {
          sends++;
          throw answer(401);
        },
      }),
    );
    expect(summary.failed).toBe(100);
    expect(sends).toBe(2);
  });
});
