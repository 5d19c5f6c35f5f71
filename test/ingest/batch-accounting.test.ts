/**
 * Batched ingestion keeps the account per record whatever happens: a shard that fails (batches
 * retried whole elsewhere, or failed record by record when every shard fails), and a balancer
 * closed mid-way, with or without drain. `written + failed` is always the records taken.
 */
import { describe, expect, it } from 'vitest';
import {
  BalancerClosedError,
  IngestError,
  p2c,
  RetriesExhaustedError,
  type ShardState,
} from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, type Rec, records, run, settle } from './helpers.js';

describe('batch accounting', () => {
  it('a failing shard: its batches are retried whole on the other shard, every record written once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 3, picker: p2c(), health: false });
    const written = new Map<number, string>();
    const summary = await run(
      clock,
      balancer.ingest(records(500), {
        batch: { maxRecords: 20, lingerMs: 5 },
        send: async (shard: ShardState<string>, batch: Rec[]) => {
          await resolveAfter(clock, 3, undefined);
          if (shard.id === 'b') throw Object.assign(new Error('503 from b'), { statusCode: 503 });
          for (const r of batch) {
            expect(written.has(r.id)).toBe(false);
            written.set(r.id, shard.id);
          }
        },
      }),
    );
    expect(summary.written).toBe(500);
    expect(summary.failed).toBe(0);
    expect(written.size).toBe(500);
    expect(summary.perShard.b).toBeUndefined();
    expect(summary.retries % 20).toBe(0); // whole batches were retried
    expect(summary.retries).toBeGreaterThan(0);
  });

  it('every shard failing: each record fails with the batch’s RetriesExhaustedError', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { health: false });
    const summary = await run(
      clock,
      balancer.ingest(records(30), {
        batch: { maxRecords: 10, lingerMs: 5 },
        send: async () => {
          throw new Error('down');
        },
      }),
    );
    expect(summary.written).toBe(0);
    expect(summary.failed).toBe(30);
    for (const { error } of summary.failures) {
      expect(error).toBeInstanceOf(RetriesExhaustedError);
      expect((error as RetriesExhaustedError).attempts).toHaveLength(3);
    }
    expect(new Set(summary.failures.map((f) => f.record.id)).size).toBe(30);
  });

  it('close without drain: records in flight and held fail with BalancerClosedError; ingest rejects', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxQueued: 100 });
    let pulled = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 10_000; id++) {
        pulled++;
        yield { id };
      }
    }
    let sent = 0;
    const ingestion = balancer.ingest(source(), {
      batch: { maxRecords: 10, lingerMs: 5, maxHeldRecords: 200 },
      send: async (_shard: unknown, batch: Rec[]) => {
        sent += batch.length;
        await resolveAfter(clock, 50, undefined);
      },
    });
    clock.setTimer(() => void balancer.close({ drain: false }), 120);
    const outcome = await settle(clock, ingestion);
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error).toBeInstanceOf(IngestError);
    expect(error.kind).toBe('closed');
    expect(error.cause).toBeInstanceOf(BalancerClosedError);
    const { summary } = error;
    expect(summary.written + summary.failed).toBe(pulled);
    expect(summary.written).toBeGreaterThan(0);
    expect(summary.written).toBeLessThan(sent);
    expect(summary.failed).toBeGreaterThan(0);
    for (const { error: e } of summary.failures) expect(e).toBeInstanceOf(BalancerClosedError);
    expect(pulled).toBeLessThan(10_000);
  });

  it('close with drain: batches admitted are written, those not yet handed over fail; ingest rejects', async () => {
    const clock = new ManualClock();
    // A short queue: a closed batch waits outside the balancer for ready().
    const balancer = fleet(clock, { maxQueued: 2 });
    let pulled = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 10_000; id++) {
        pulled++;
        yield { id };
      }
    }
    let inFlightAtClose = 0;
    const ingestion = balancer.ingest(source(), {
      batch: { maxRecords: 10, lingerMs: 5, maxHeldRecords: 200 },
      send: () => resolveAfter(clock, 50, undefined),
    });
    let closed: Promise<void> | undefined;
    clock.setTimer(() => {
      inFlightAtClose = balancer.stats().inFlight;
      closed = balancer.close();
    }, 120);
    const outcome = await settle(clock, ingestion);
    const { summary, kind } = (outcome as { error: IngestError<Rec> }).error;
    expect(kind).toBe('closed');
    expect(inFlightAtClose).toBeGreaterThan(0);
    expect(summary.written + summary.failed).toBe(pulled);
    // Drained: what the balancer had admitted was written; the batches still in the ingestion
    // (never handed to the balancer: it admits nothing once closed) failed — whole batches, and
    // never more than the records it may hold.
    expect(summary.written).toBeGreaterThanOrEqual(inFlightAtClose * 10);
    expect(summary.failed).toBeGreaterThan(0);
    expect(summary.failed % 10).toBe(0);
    expect(summary.failed).toBeLessThanOrEqual(200);
    for (const { error } of summary.failures) expect(error).toBeInstanceOf(BalancerClosedError);
    await closed;
  });
});
