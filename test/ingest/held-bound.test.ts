/**
 * A fast source never outruns memory: the records held — taken from the source and not yet
 * settled, in open batches, waiting, in flight or backing off — stay within `maxHeldRecords` and
 * `maxHeldBytes`, not within `maxQueued × maxRecords`. Counts on virtual time, never timings.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_DEFAULTS, type IngestError } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, type Rec, run, settle } from './helpers.js';

describe('records held by a batched ingestion', () => {
  it('stay within maxHeldRecords under a source far faster than the shards', async () => {
    const clock = new ManualClock();
    // maxQueued × maxRecords would be 100 000 records, the balancer's capacity 10 000 (2 × 50
    // in flight, as many waiting): the held bound is what binds.
    const balancer = fleet(clock, { maxQueued: 1_000, maxInFlightPerShard: 50 });
    let pulled = 0;
    let settled = 0;
    let peak = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 50_000; id++) {
        peak = Math.max(peak, pulled - settled);
        pulled++;
        yield { id };
      }
    }
    const summary = await run(
      clock,
      balancer.ingest(source(), {
        batch: { maxRecords: 100, lingerMs: 5, maxHeldRecords: 2_000 },
        send: async (_shard: unknown, batch: Rec[]) => {
          await resolveAfter(clock, 10, undefined);
          settled += batch.length;
        },
      }),
    );
    expect(summary.written).toBe(50_000);
    expect(peak).toBeLessThanOrEqual(2_000);
    expect(peak).toBeGreaterThan(1_500); // the bound was reached, not merely respected
  });

  it('stay within maxHeldBytes over size(record)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxQueued: 1_000, maxInFlightPerShard: 50 });
    let pulledBytes = 0;
    let settledBytes = 0;
    let peak = 0;
    const size = (r: Rec) => 100 + (r.id % 7) * 10;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 20_000; id++) {
        peak = Math.max(peak, pulledBytes - settledBytes);
        pulledBytes += size({ id });
        yield { id };
      }
    }
    const summary = await run(
      clock,
      balancer.ingest(source(), {
        batch: { maxRecords: 50, maxBytes: 4_000, lingerMs: 5, size, maxHeldBytes: 20_000 },
        send: async (_shard: unknown, batch: Rec[]) => {
          await resolveAfter(clock, 10, undefined);
          for (const r of batch) settledBytes += size(r);
        },
      }),
    );
    expect(summary.written).toBe(20_000);
    // The bound may be passed by the one record taken when it was reached.
    expect(peak).toBeLessThan(20_000 + 160);
    expect(peak).toBeGreaterThan(15_000);
  });

  it('are handed to the balancer no faster than it can start them (twice its capacity at most)', async () => {
    const clock = new ManualClock();
    // Capacity 2 × 3 = 6 runs: at most 12 batches waiting or running, however big maxQueued is.
    const balancer = fleet(clock, { maxQueued: 10_000, maxInFlightPerShard: 3 });
    let peakQueued = 0;
    let peakBatches = 0;
    let pending = 0;
    const summary = await run(
      clock,
      balancer.ingest(
        (function* () {
          for (let id = 0; id < 20_000; id++) yield { id };
        })(),
        {
          batch: { maxRecords: 100, lingerMs: 5 },
          send: async () => {
            pending++;
            const { queued, inFlight } = balancer.stats();
            peakQueued = Math.max(peakQueued, queued);
            peakBatches = Math.max(peakBatches, queued + inFlight);
            await resolveAfter(clock, 10, undefined);
            pending--;
          },
        },
      ),
    );
    expect(summary.written).toBe(20_000);
    expect(peakBatches).toBeLessThanOrEqual(12);
    expect(peakQueued).toBeGreaterThan(0); // the balancer always had the next batch at hand
    expect(pending).toBe(0);
  });

  it(`read no further than the default bound (${BATCH_DEFAULTS.maxHeldRecords.toLocaleString('en')} records) while nothing settles`, async () => {
    const clock = new ManualClock();
    // Room for far more than 100 000 records in flight: only the held bound can stop the source.
    const balancer = fleet(clock, { maxQueued: 10_000, maxInFlightPerShard: 100_000 });
    let pulled = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 300_000; id++) {
        pulled++;
        yield { id };
      }
    }
    const ingestion = balancer.ingest(source(), {
      batch: {},
      // Shards that never answer.
      send: () => new Promise<undefined>(() => {}),
    });
    for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(pulled).toBe(100_000);
    void balancer.close({ drain: false });
    const outcome = await settle(clock, ingestion);
    const { summary } = (outcome as { error: IngestError<Rec> }).error;
    expect(summary.failed).toBe(100_000);
    expect(summary.written).toBe(0);
  });
});
