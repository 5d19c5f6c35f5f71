/**
 * Partial failure: a batch `send` resolving `{ failed: [{ index, error, retryable }] }` settles
 * the other records as written and retries only the refused ones, record by record, in later
 * batches (to the same home when keyed), after a backoff, under the record retry rule: attempts
 * (whole-batch retries counted), the budget. A thrown error retries the whole batch.
 */
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  consistentHash,
  RetriesExhaustedError,
  type ShardState,
} from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ids, ManualClock, type Rec, records, run } from './helpers.js';

interface Send {
  shard: string;
  ids: number[];
  at: number;
}

describe('partial failures', () => {
  it('retries only the refused records, in later batches, until written', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const sends: Send[] = [];
    const refusedOnce = new Set<number>();
    const summary = await run(
      clock,
      balancer.ingest(records(40), {
        batch: { maxRecords: 10, lingerMs: 5 },
        send: async (shard: ShardState<string>, batch: Rec[]) => {
          sends.push({ shard: shard.id, ids: ids(batch), at: clock.now() });
          await resolveAfter(clock, 2, undefined);
          // The shard refuses records whose id ends in 3 or 7, the first time it sees them.
          const failed = [];
          for (let i = 0; i < batch.length; i++) {
            const id = batch[i]!.id;
            if ((id % 10 === 3 || id % 10 === 7) && !refusedOnce.has(id)) {
              refusedOnce.add(id);
              failed.push({ index: i, error: new Error(`busy with ${id}`) });
            }
          }
          return { failed };
        },
      }),
    );
    expect(summary).toMatchObject({ written: 40, failed: 0 });
    expect(refusedOnce.size).toBe(8);
    // First sends: 4 full batches; then the 8 refused records again, and only them.
    const firsts = sends.slice(0, 4).flatMap((s) => s.ids);
    expect(firsts).toEqual(records(40).map((r) => r.id));
    const again = sends.slice(4).flatMap((s) => s.ids);
    expect(again.sort((a, b) => a - b)).toEqual([3, 7, 13, 17, 23, 27, 33, 37]);
    expect(summary.retries).toBe(8);
    expect(summary.batches).toBe(sends.length);
    // Each re-send waited for a backoff after its refusal, on the balancer's clock.
    for (const s of sends.slice(4)) expect(s.at).toBeGreaterThanOrEqual(2);
  });

  it('fails a record refused on every attempt with RetriesExhaustedError holding each attempt', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let sendsOf5 = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(10), {
        batch: { maxRecords: 10, lingerMs: 5, retry: { attempts: 4 } },
        send: async (shard: ShardState<string>, batch: Rec[]) => {
          await resolveAfter(clock, 1, undefined);
          const i = batch.findIndex((r) => r.id === 5);
          if (i < 0) return undefined;
          sendsOf5++;
          return { failed: [{ index: i, error: new Error(`no room on ${shard.id}`) }] };
        },
      }),
    );
    expect(sendsOf5).toBe(4);
    expect(summary.written).toBe(9);
    expect(summary.failed).toBe(1);
    const error = summary.failures[0]!.error as RetriesExhaustedError;
    expect(summary.failures[0]!.record.id).toBe(5);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error.attempts).toHaveLength(4);
    expect(error.attempts.map((a) => (a.error as Error).message)).toEqual(
      error.attempts.map((a) => `no room on ${a.shardId}`),
    );
    expect(error.message).toContain('all 4 attempts failed');
    expect(summary.retries).toBe(3);
  });

  it('does not retry a record refused as not retryable: it fails with its own error', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const malformed = new Error('record 2 is malformed');
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(4), {
        batch: { maxRecords: 4, lingerMs: 5 },
        send: async (_shard: unknown, batch: Rec[]) => {
          sends++;
          return {
            failed: [
              { index: batch.findIndex((r) => r.id === 2), error: malformed, retryable: false },
            ],
          };
        },
      }),
    );
    expect(sends).toBe(1);
    expect(summary.written).toBe(3);
    expect(summary.failures).toEqual([{ record: { id: 2 }, error: malformed }]);
  });

  it('keeps a keyed record’s retries on its home shard', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 3, picker: consistentHash() });
    const seen = new Map<number, string[]>();
    const summary = await run(
      clock,
      balancer.ingest(
        records(60, (id) => `k${id % 12}`),
        {
          key: (r) => r.key,
          batch: { maxRecords: 8, lingerMs: 5 },
          send: async (shard: ShardState<string>, batch: Rec[]) => {
            const failed = [];
            for (let i = 0; i < batch.length; i++) {
              const r = batch[i]!;
              const where = seen.get(r.id) ?? [];
              where.push(shard.id);
              seen.set(r.id, where);
              if (r.id % 4 === 0 && where.length < 3) failed.push({ index: i });
            }
            return { failed };
          },
        },
      ),
    );
    expect(summary).toMatchObject({ written: 60, failed: 0 });
    for (const [id, where] of seen) {
      expect(where.length).toBe(id % 4 === 0 ? 3 : 1);
      expect(new Set(where).size).toBe(1); // the same home each time
      expect(where[0]).toBe(balancer.homeOf(`k${id % 12}`));
    }
  });

  it('stops retrying records when the budget is spent', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const summary = await run(
      clock,
      balancer.ingest(records(100), {
        batch: {
          maxRecords: 100,
          lingerMs: 5,
          retry: { attempts: 3, budget: { ratio: 0, minPerSecond: 1, ttlMs: 10_000 } },
        },
        // Refuses everything, always: the budget allows 10 re-sends in its 10 s window.
        send: async (_shard: unknown, batch: Rec[]) => ({
          failed: batch.map((_, index) => ({ index })),
        }),
      }),
    );
    expect(summary.written).toBe(0);
    expect(summary.failed).toBe(100);
    const errors = summary.failures.map((f) => f.error as RetriesExhaustedError);
    for (const error of errors) expect(error.message).toContain('the retry budget is exhausted');
    // Ten records got the one re-send the budget had room for; then it was spent for them too.
    const sentTwice = errors.filter((e) => e.attempts.length === 2);
    expect(sentTwice).toHaveLength(10);
    expect(errors.filter((e) => e.attempts.length === 1)).toHaveLength(90);
  });

  it('counts whole-batch retries of a thrown error among a record’s attempts', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(5), {
        batch: { maxRecords: 5, lingerMs: 5 },
        send: async (_shard: unknown, batch: Rec[]) => {
          sends++;
          if (sends === 1) throw new Error('connection reset'); // the whole batch, retried whole
          // Then record 1 is refused: it has used 2 of its 3 attempts, so one more send.
          const i = batch.findIndex((r) => r.id === 1);
          return i < 0 ? undefined : { failed: [{ index: i, error: new Error('refused') }] };
        },
      }),
    );
    expect(sends).toBe(3);
    expect(summary.written).toBe(4);
    const error = summary.failures[0]!.error as RetriesExhaustedError;
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error.attempts.map((a) => (a.error as Error).message)).toEqual([
      'connection reset',
      'refused',
      'refused',
    ]);
    expect(summary.retries).toBe(5 + 1); // the whole batch once, then record 1 once
  });

  it('retries refused records even when the ingestion is not idempotent (they were not written)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let refused = false;
    const summary = await run(
      clock,
      balancer.ingest(records(3), {
        idempotent: false,
        batch: { maxRecords: 3, lingerMs: 5 },
        send: async () => {
          if (refused) return undefined;
          refused = true;
          return { failed: [{ index: 0 }] };
        },
      }),
    );
    expect(summary).toMatchObject({ written: 3, failed: 0, retries: 1, batches: 2 });
  });

  it('fails the batch with a ConfigError naming the field when the result lists a bad index', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(3), {
        batch: { maxRecords: 3, lingerMs: 5 },
        send: async () => {
          sends++;
          return { failed: [{ index: 3 }] };
        },
      }),
    );
    expect(sends).toBe(1); // a ConfigError is not retried
    expect(summary.failed).toBe(3);
    for (const { error } of summary.failures) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(
        /`ingest\.send\(\) result\.failed\[0\]\.index` must be an integer from 0 to 2/,
      );
    }
  });
});
