/**
 * Issue #13: when several records failed through `createWriteStream()`, only the first was
 * reported — later failures vanished because the stream was already destroyed. Now every record
 * the stream took is written or reported: a `'failed'` event per record, and a summary; the
 * stream still errors with a `WriteFailedError` for the first failure, once what it took settled.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { type IngestSummary, type RecordWriteStream, WriteFailedError } from '../../src/index.js';
import { failAfter, resolveAfter, tick, track } from '../helpers.js';
import { fleet, ManualClock, type Rec, records } from './helpers.js';

/** Records 1, 2 and 5 fail (2 first, then 5, then 1); the others are written after 10–30 ms. */
function sender(clock: ManualClock, sent: number[]) {
  const errors = new Map<number, Error>();
  const failIn: Record<number, number> = { 1: 8, 2: 3, 5: 6 };
  for (const id of [1, 2, 5]) {
    errors.set(id, Object.assign(new Error(`record ${id} refused`), { retryable: false }));
  }
  const send = (_shard: unknown, record: Rec) => {
    sent.push(record.id);
    const error = errors.get(record.id);
    return error === undefined
      ? resolveAfter(clock, 10 * ((record.id % 3) + 1), undefined)
      : failAfter(clock, failIn[record.id]!, error);
  };
  return { send, errors };
}

describe('createWriteStream with several failed records', () => {
  it('reports every one, and errors with the first once the rest has settled', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 2, maxQueued: 4 });
    const sent: number[] = [];
    const { send, errors } = sender(clock, sent);
    const stream = balancer.createWriteStream<Rec>({ send }) as RecordWriteStream<Rec>;
    const failedEvents: [number, unknown][] = [];
    stream.on('failed', (record: Rec, error: unknown) => failedEvents.push([record.id, error]));
    let atError: { written: number; failed: number } | undefined;
    const all = records(50);
    const done = track(
      pipeline(Readable.from(all), stream).catch((error: unknown) => {
        atError = { written: stream.summary.written, failed: stream.summary.failed };
        throw error;
      }),
    );
    await tick(clock, 200);
    expect(done.settled).toBe(true);
    expect(done.ok).toBe(false);
    const error = done.error as WriteFailedError;
    expect(error).toBeInstanceOf(WriteFailedError);
    expect(error.record).toBe(all[2]); // the first to fail
    expect(error.cause).toBe(errors.get(2));

    const summary: IngestSummary<Rec> = await stream.settled;
    expect(summary).toBe(stream.summary);
    // The account was whole when the error came.
    expect(atError).toEqual({ written: summary.written, failed: summary.failed });
    // Each failed send is reported with its own error — not only the first.
    for (const id of [1, 2, 5]) {
      expect(summary.failures.find((f) => f.record.id === id)?.error).toBe(errors.get(id));
    }
    // Any record the stream took after the first failure was refused, unsent, and reported.
    const refused = summary.failures.filter((f) => !errors.has(f.record.id));
    for (const { record, error: why } of refused) {
      expect(sent).not.toContain(record.id);
      expect(why).toBeInstanceOf(WriteFailedError);
      expect((why as Error).message).toMatch(
        /not sent: the write stream failed on an earlier record/,
      );
    }
    // Exactly once each: written ones were sent and succeeded, the rest are listed.
    const failedIds = summary.failures.map((f) => f.record.id);
    expect(new Set(failedIds).size).toBe(failedIds.length);
    expect(summary.written).toBe(sent.filter((id) => !errors.has(id)).length);
    expect(failedEvents.map(([id]) => id)).toEqual(failedIds);
    expect(failedEvents.map(([, e]) => e)).toEqual(summary.failures.map((f) => f.error));
    // Far from every record was taken: the stream stopped reading.
    expect(summary.written + summary.failed).toBeLessThan(all.length);
    expect(balancer.stats().inFlight).toBe(0);
  });

  it('records written past its backpressure are refused and reported when it fails, never dropped', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 2, maxQueued: 4 });
    const sent: number[] = [];
    const { send, errors } = sender(clock, sent);
    const stream = balancer.createWriteStream<Rec>({ send }) as RecordWriteStream<Rec>;
    let failedEvents = 0;
    stream.on('failed', () => failedEvents++);
    stream.on('error', () => {});
    // A careless producer: 50 writes at once, whatever write() returns (Node buffers them).
    for (const record of records(50)) stream.write(record);
    await tick(clock, 200);
    const summary = await stream.settled;
    expect(stream.errored).toBeInstanceOf(WriteFailedError);
    expect((stream.errored as WriteFailedError).record).toEqual({ id: 2 });
    // All 50 were handed to the stream: each is written or reported, exactly once.
    expect(summary.written + summary.failed).toBe(50);
    expect(new Set(summary.failures.map((f) => f.record.id)).size).toBe(summary.failed);
    expect(summary.written).toBe(sent.filter((id) => !errors.has(id)).length);
    const unsent = summary.failures.filter((f) => !sent.includes(f.record.id));
    expect(unsent.length).toBeGreaterThan(30);
    for (const { error } of unsent) expect((error as Error).message).toMatch(/^not sent: /);
    expect(failedEvents).toBe(summary.failed);
  });

  it('with batches: every refused record of every batch is reported', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      batch: { maxRecords: 5, lingerMs: 10, retry: false },
      // Every batch refuses its records at positions 1 and 3 (not retried: retries are off).
      send: async (_shard: unknown, batch: Rec[]) => {
        await resolveAfter(clock, 5, undefined);
        return {
          failed: [
            { index: 1, error: new Error(`refused ${batch[1]!.id}`) },
            { index: 3, error: new Error(`refused ${batch[3]!.id}`) },
          ],
        };
      },
    }) as RecordWriteStream<Rec>;
    const failedEvents: number[] = [];
    stream.on('failed', (record: Rec) => failedEvents.push(record.id));
    stream.on('error', () => {});
    for (const record of records(15)) stream.write(record);
    stream.end();
    await tick(clock, 100);
    const summary = await stream.settled;
    // Three batches were in the stream when the first refusal came: all settle, all reported.
    expect(summary.written + summary.failed).toBe(15);
    expect(failedEvents.sort((a, b) => a - b)).toEqual([1, 3, 6, 8, 11, 13]);
    expect(summary.written).toBe(9);
    expect(stream.errored).toBeInstanceOf(WriteFailedError);
  });
});
