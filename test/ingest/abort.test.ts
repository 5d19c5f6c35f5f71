/**
 * Issue #13, "Records that are neither written nor reported": an aborted `ingest()` used to pull
 * the next record, see the abort, and drop it. Now the record taken when the abort is seen is
 * reported failed with the abort reason, admitted records settle, and `ingest` rejects — only
 * then — with an `IngestError` whose summary accounts for every record taken.
 */
import { describe, expect, it } from 'vitest';
import { IngestError } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ids, ManualClock, type Rec, settle } from './helpers.js';

describe('ingest aborted by its signal', () => {
  it('reports the record taken at the abort as failed, and rejects once the others settled', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const controller = new AbortController();
    const reason = new Error('operator stopped the load');
    let pulled = 0;
    let settledSends = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 1_000; id++) {
        pulled++;
        if (id === 40) controller.abort(reason);
        yield { id };
      }
    }
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        send: () =>
          resolveAfter(clock, 30, undefined).then(() => {
            settledSends++;
          }),
        signal: controller.signal,
      }),
    );
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error).toBeInstanceOf(IngestError);
    expect(error.kind).toBe('aborted');
    expect(error.cause).toBe(reason);
    expect(error.code).toBe('SHARDWISE_INGEST_STOPPED');
    const { summary } = error;
    // Every record taken is accounted for, exactly once.
    expect(pulled).toBe(41);
    expect(summary.written + summary.failed).toBe(pulled);
    expect(summary.written).toBe(40);
    expect(summary.failed).toBe(1);
    expect(summary.failures).toEqual([{ record: { id: 40 }, error: reason }]);
    expect(summary.errors).toBe(summary.failures);
    // Rejected only after every admitted record had settled.
    expect(settledSends).toBe(40);
    expect(balancer.stats().inFlight).toBe(0);
  });

  it('reports the record to onFailed too', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const controller = new AbortController();
    const reported: [number, unknown][] = [];
    function* source(): Generator<Rec> {
      for (let id = 0; id < 10; id++) {
        if (id === 4) controller.abort('halt');
        yield { id };
      }
    }
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        send: () => resolveAfter(clock, 2, undefined),
        signal: controller.signal,
        onFailed: (record, error) => reported.push([record.id, error]),
      }),
    );
    expect(outcome.ok).toBe(false);
    expect(reported).toEqual([[4, 'halt']]);
  });

  it('does not wait for a source that is still producing, and still reports what it yields late', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const controller = new AbortController();
    async function* source(): AsyncGenerator<Rec> {
      for (let id = 0; id < 100; id++) {
        await resolveAfter(clock, 10, undefined);
        yield { id };
      }
    }
    const late: number[] = [];
    clock.setTimer(() => controller.abort('stop'), 25); // while record 2 is being produced
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        send: () => resolveAfter(clock, 1, undefined),
        signal: controller.signal,
        onFailed: (record) => late.push(record.id),
      }),
    );
    expect(outcome.ok).toBe(false);
    const { summary, kind } = (outcome as { error: IngestError<Rec> }).error;
    expect(kind).toBe('aborted');
    expect(summary.written).toBe(2); // records 0 and 1
    // Record 2 was still being produced: when it comes, `onFailed` hears of it with the abort's
    // reason; the summary, final since the rejection, does not change.
    const final = JSON.stringify(summary);
    await settle(clock, resolveAfter(clock, 10, undefined));
    expect(late).toEqual([2]);
    expect(JSON.stringify(summary)).toBe(final);
    expect(summary.written + summary.failed).toBe(2);
  });

  it('with batches: records held in open batches are sent; the one taken at the abort fails', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const controller = new AbortController();
    const sent: number[][] = [];
    function* source(): Generator<Rec> {
      for (let id = 0; id < 1_000; id++) {
        if (id === 23) controller.abort('enough');
        yield { id };
      }
    }
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        batch: { maxRecords: 10, lingerMs: 1_000 },
        send: async (_shard: unknown, batch: Rec[]) => {
          sent.push(ids(batch));
          await resolveAfter(clock, 5, undefined);
        },
        signal: controller.signal,
      }),
    );
    expect(outcome.ok).toBe(false);
    const { summary } = (outcome as { error: IngestError<Rec> }).error;
    // 0–9 and 10–19 filled batches; 20–22 were in the open batch: flushed, not dropped.
    expect(sent).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
      [20, 21, 22],
    ]);
    expect(summary.written).toBe(23);
    expect(summary.failed).toBe(1);
    expect(summary.failures[0]!.record.id).toBe(23);
    expect(summary.batches).toBe(3);
  });

  it('an already aborted signal takes nothing', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let pulled = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 10; id++) {
        pulled++;
        yield { id };
      }
    }
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        send: async () => undefined,
        signal: AbortSignal.abort('before'),
      }),
    );
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error.cause).toBe('before');
    expect(pulled).toBe(0);
    expect(error.summary).toMatchObject({ written: 0, failed: 0 });
  });
});
