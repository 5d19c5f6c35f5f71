/**
 * Issue #13: when the source threw, `ingest` used to reject at once while records it had
 * admitted were still being written, and the caller learned nothing about which ones landed.
 * Now it rejects only once every admitted record has settled, with an `IngestError` (`kind:
 * 'source'`, `cause`: the source's error) whose summary accounts for every record taken.
 */
import { describe, expect, it } from 'vitest';
import { IngestError } from '../../src/index.js';
import { failAfter, resolveAfter } from '../helpers.js';
import { fleet, ids, ManualClock, type Rec, settle } from './helpers.js';

const broken = new Error('disk read failed at byte 4096');

describe('ingest whose source throws', () => {
  it('rejects after the admitted records settled, with the account of each', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    function* source(): Generator<Rec> {
      for (let id = 0; id < 30; id++) yield { id };
      throw broken;
    }
    let inFlightAtRejection = -1;
    const bad = Object.assign(new Error('record 7 is malformed'), { retryable: false });
    const ingestion = balancer.ingest(source(), {
      send: (_shard, record) =>
        record.id === 7 ? failAfter(clock, 50, bad) : resolveAfter(clock, 100, undefined),
    });
    ingestion.catch(() => {
      inFlightAtRejection = balancer.stats().inFlight;
    });
    const outcome = await settle(clock, ingestion);
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error).toBeInstanceOf(IngestError);
    expect(error.kind).toBe('source');
    expect(error.cause).toBe(broken);
    expect(error.message).toContain('disk read failed');
    const { summary } = error;
    expect(summary.written).toBe(29);
    expect(summary.failed).toBe(1);
    expect(summary.failures).toEqual([{ record: { id: 7 }, error: bad }]);
    expect(summary.perShard.a! + summary.perShard.b!).toBe(29);
    expect(inFlightAtRejection).toBe(0); // nothing was still being written
    expect(summary.durationMs).toBeGreaterThanOrEqual(100);
  });

  it('an async source that rejects: the same account', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    async function* source(): AsyncGenerator<Rec> {
      for (let id = 0; id < 12; id++) {
        await resolveAfter(clock, 1, undefined);
        yield { id };
      }
      throw broken;
    }
    const outcome = await settle(
      clock,
      balancer.ingest(source(), { send: () => resolveAfter(clock, 40, undefined) }),
    );
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error.kind).toBe('source');
    expect(error.summary).toMatchObject({ written: 12, failed: 0 });
  });

  it('with batches: the open batch is flushed and written before the rejection', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    function* source(): Generator<Rec> {
      for (let id = 0; id < 25; id++) yield { id };
      throw broken;
    }
    const sent: number[][] = [];
    const outcome = await settle(
      clock,
      balancer.ingest(source(), {
        batch: { maxRecords: 10, lingerMs: 10_000 },
        send: async (_shard: unknown, batch: Rec[]) => {
          sent.push(ids(batch));
          await resolveAfter(clock, 20, undefined);
        },
      }),
    );
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error.kind).toBe('source');
    expect(sent.map((b) => b.length)).toEqual([10, 10, 5]);
    expect(error.summary).toMatchObject({ written: 25, failed: 0, batches: 3 });
  });

  it('a source whose iterator cannot even be made', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const source = {
      [Symbol.iterator](): Iterator<Rec> {
        throw broken;
      },
    };
    const outcome = await settle(clock, balancer.ingest(source, { send: async () => undefined }));
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error.kind).toBe('source');
    expect(error.cause).toBe(broken);
    expect(error.summary).toMatchObject({ written: 0, failed: 0 });
  });
});
