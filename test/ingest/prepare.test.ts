/**
 * A transport readies each batch before its run (`http.ingest` and `s3.ingest` compress its body
 * there): on virtual time, a batch being readied holds no shard slot and no queue place, counts
 * among its home's running batches (so windows and `ordering: 'key'` hold), expires when its
 * deadline passes meanwhile, fails its records when readying fails, and is readied once however
 * often its run retries.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Balancer,
  consistentHash,
  PushBackError,
  ShardUnavailableError,
} from '../../src/index.js';
import type { Batch } from '../../src/ingest/batch.js';
import type { BatchSender } from '../../src/ingest/sender.js';
import { batchPlan, ingestWithPlan, readRecordOptions } from '../../src/ingest/transport-plan.js';
import type { IngestSummary } from '../../src/ingest/types.js';
import { seededRandom } from '../../src/testing/index.js';
import { fleet, ManualClock, type Rec, records, run, settle } from './helpers.js';

const DEFAULTS = { maxRecords: 500, maxBytes: 1024 * 1024, lingerMs: 50 };

/**
 * An ingestion of `source` on `balancer` through a transport plan whose batches are readied by
 * `prepare` and sent by `send` (options as `http.ingest` takes them, less its own).
 */
function ingestPrepared(
  balancer: Balancer<string>,
  source: Rec[],
  options: Record<string, unknown>,
  prepare: (batch: Batch<Rec>) => Promise<void> | undefined,
  send: BatchSender<string, Rec>,
): Promise<IngestSummary<Rec>> {
  return ingestWithPlan('t.ingest', balancer, source, options, (field) => {
    const read = readRecordOptions<Rec>(
      field,
      options,
      ['batch', 'key', 'ordering', 'deliveryTimeoutMs', 'onFailed'],
      DEFAULTS,
    );
    return batchPlan(balancer, field, read, () => send, {
      prepare,
      start: () => Promise.resolve(),
    });
  });
}

/** Resolves after `ms` of virtual time. */
function waitFor(clock: ManualClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, ms));
}

describe('readying a batch before its run', () => {
  it('holds no slot and no queue place meanwhile; windows count it; each batch is readied once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 2,
      maxInFlightPerShard: 1,
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
      health: false,
    });
    const readied = new Map<Batch<Rec>, number>();
    let preparing = 0;
    let sending = 0;
    let most = 0;
    let overlapped = false;
    let slotsWhilePreparing = 0;
    let sends = 0;
    const summary = await run(
      clock,
      ingestPrepared(
        balancer,
        records(200),
        { batch: { maxRecords: 10 } },
        (batch) => {
          if (batch.prepared !== undefined) return undefined;
          readied.set(batch, (readied.get(batch) ?? 0) + 1);
          preparing++;
          most = Math.max(most, preparing + sending);
          const { inFlight, queued } = balancer.stats();
          slotsWhilePreparing = Math.max(slotsWhilePreparing, inFlight + queued - sending);
          return waitFor(clock, 7).then(() => {
            preparing--;
            batch.prepared = 'ready';
          });
        },
        async (_shard, batch) => {
          expect(batch.prepared).toBe('ready');
          sends++;
          sending++;
          if (preparing > 0) overlapped = true;
          most = Math.max(most, preparing + sending);
          await waitFor(clock, 5);
          sending--;
          // Every third send fails: its run retries, and the batch is not readied again.
          if (sends % 3 === 0) throw new Error('503');
        },
      ),
    );
    expect(summary.written).toBe(200);
    expect([...readied.values()].every((n) => n === 1)).toBe(true);
    expect(readied.size).toBe(20);
    expect(summary.batches).toBe(sends);
    expect(sends).toBeGreaterThan(20);
    // Unkeyed batches: every shard's cap plus one each, (1 + 1) × 2, readying ones included.
    expect(most).toBeLessThanOrEqual(4);
    expect(most).toBeGreaterThan(1);
    // The next batch is readied while one is sent, and readying holds no slot or queue place.
    expect(overlapped).toBe(true);
    expect(slotsWhilePreparing).toBe(0);
    await balancer.close();
  });

  it('a batch whose deadline passes while it is readied expires; nothing of it is sent', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    let sent = 0;
    const summary = await run(
      clock,
      ingestPrepared(
        balancer,
        records(30),
        { batch: { maxRecords: 10 }, deliveryTimeoutMs: 100 },
        (batch) => (batch.prepared === undefined ? waitFor(clock, 500) : undefined),
        async () => {
          sent++;
        },
      ),
    );
    expect(sent).toBe(0);
    expect(summary.failed).toBe(30);
    expect(summary.failures.every((f) => f.error instanceof ShardUnavailableError)).toBe(true);
    await balancer.close();
  });

  it('a batch whose readying fails fails its records with that error; the others are written', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    const broken = new Error('the codec failed');
    const written: number[] = [];
    const summary = await run(
      clock,
      ingestPrepared(
        balancer,
        records(50),
        { batch: { maxRecords: 10 } },
        (batch) => {
          if (batch.prepared !== undefined) return undefined;
          // The batch holding record 20 cannot be readied (a sync throw is a failure too).
          if (batch.records.some((r) => r.id === 20)) {
            if (batch.records[0]!.id === 20) throw broken;
            return Promise.reject(broken);
          }
          batch.prepared = 'ready';
          return waitFor(clock, 1);
        },
        async (_shard, batch) => {
          written.push(...batch.records.map((r) => r.id));
        },
      ),
    );
    expect(summary.failed).toBe(10);
    expect(summary.failures.map((f) => f.record.id)).toEqual(
      Array.from({ length: 10 }, (_, i) => 20 + i),
    );
    expect(summary.failures.every((f) => f.error === broken)).toBe(true);
    expect(written.sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i).filter((i) => i < 20 || i >= 30),
    );
    await balancer.close();
  });

  it("ordering: 'key' holds while batches are readied for random virtual times", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          seed: fc.integer({ min: 1, max: 1_000_000 }),
          failRate: fc.double({ min: 0, max: 0.4, noNaN: true }),
          pushBackRate: fc.double({ min: 0, max: 0.3, noNaN: true }),
          keys: fc.integer({ min: 1, max: 10 }),
          maxRecords: fc.integer({ min: 1, max: 15 }),
        }),
        async (s) => {
          const clock = new ManualClock();
          const rnd = seededRandom(s.seed);
          const balancer = fleet(clock, {
            shards: 3,
            picker: consistentHash(),
            timeoutMs: 50,
            retry: { attempts: 1_000, backoff: { baseMs: 1, maxMs: 20 }, budget: false },
            health: { consecutiveFailures: 1_000 },
          });
          const data = records(200, () => `k${Math.floor(rnd() * s.keys)}`);
          const firstArrival: number[] = [];
          const arrived = new Set<number>();
          const outcome = await settle(
            clock,
            ingestPrepared(
              balancer,
              data,
              {
                key: (r: Rec) => r.key,
                ordering: 'key',
                batch: { maxRecords: s.maxRecords, lingerMs: 2 },
              },
              (batch) =>
                batch.prepared !== undefined
                  ? undefined
                  : waitFor(clock, 1 + rnd() * 30).then(() => {
                      batch.prepared = 'ready';
                    }),
              async (_shard, batch) => {
                await waitFor(clock, 1 + rnd() * 5);
                const roll = rnd();
                if (roll < s.pushBackRate) throw new PushBackError(rnd() * 100);
                if (roll < s.pushBackRate + s.failRate) throw new Error('503');
                for (const r of batch.records) {
                  if (arrived.has(r.id)) continue;
                  arrived.add(r.id);
                  firstArrival.push(r.id);
                }
              },
            ),
            1_000_000,
          );
          expect(outcome.ok).toBe(true);
          expect(arrived.size).toBe(data.length);
          const byKey = new Map<string, number[]>();
          for (const id of firstArrival) {
            const key = data[id]!.key!;
            byKey.set(key, [...(byKey.get(key) ?? []), id]);
          }
          for (const ids of byKey.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
          await balancer.close({ drain: false });
        },
      ),
      { numRuns: 20, seed: 20260731 },
    );
  });
});
