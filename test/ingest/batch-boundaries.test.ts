/**
 * Where batches end, exactly, on virtual time: `maxRecords`, `maxBytes` (a hard bound over
 * `size(record)`; only a record larger than it travels alone), `lingerMs` counted from a batch's
 * first record on the balancer's clock, and the end of the source flushing what is left.
 */
import { describe, expect, it } from 'vitest';
import { resolveAfter } from '../helpers.js';
import { fleet, ids, ManualClock, type Rec, records, run } from './helpers.js';

interface Sent {
  at: number;
  ids: number[];
  bytes: number;
}

/** A batch `send` that records what each batch held and when it went. */
function recorder(clock: ManualClock, size?: (record: Rec) => number) {
  const sent: Sent[] = [];
  const send = async (_shard: unknown, batch: Rec[]) => {
    sent.push({
      at: clock.now(),
      ids: ids(batch),
      bytes: size === undefined ? 0 : batch.reduce((sum, r) => sum + size(r), 0),
    });
    await resolveAfter(clock, 1, undefined);
  };
  return { sent, send };
}

describe('batch boundaries', () => {
  it('closes a batch at maxRecords; the end of the source flushes the rest', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const { sent, send } = recorder(clock);
    const summary = await run(
      clock,
      balancer.ingest(records(10), { batch: { maxRecords: 4, lingerMs: 60_000 }, send }),
    );
    expect(sent.map((s) => s.ids)).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ]);
    expect(sent.every((s) => s.at === 0)).toBe(true); // none waited for its linger
    expect(summary).toMatchObject({ written: 10, failed: 0, batches: 3 });
  });

  it('keeps every batch within maxBytes; a record larger than it travels alone', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const sizes = [10, 20, 6, 30, 5, 40, 1];
    const size = (r: Rec) => sizes[r.id]!;
    const { sent, send } = recorder(clock, size);
    const summary = await run(
      clock,
      balancer.ingest(records(sizes.length), {
        batch: { maxRecords: 100, maxBytes: 35, lingerMs: 60_000, size },
        send,
      }),
    );
    expect(sent.map((s) => s.ids)).toEqual([[0, 1], [2], [3, 4], [5], [6]]);
    expect(sent.map((s) => s.bytes)).toEqual([30, 6, 35, 40, 1]);
    expect(summary.bytes).toBe(112); // the sizes of the records written
  });

  it('measures a record by its NDJSON line by default: its JSON and a newline', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const { sent, send } = recorder(clock);
    // {"id":0} is 8 bytes and a newline: three fit in 27 bytes, a fourth would not.
    const summary = await run(
      clock,
      balancer.ingest(records(7), { batch: { maxBytes: 27, lingerMs: 60_000 }, send }),
    );
    expect(sent.map((s) => s.ids)).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(summary.bytes).toBe(7 * 9);
  });

  it('sends a batch when its linger expires, timed from its first record', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const { sent, send } = recorder(clock);
    async function* source(): AsyncGenerator<Rec> {
      // Records at t = 1, 6, 11, 16, 21 …: a trickle, slower than any batch fills.
      for (let id = 0; id < 8; id++) {
        await resolveAfter(clock, id === 0 ? 1 : 5, undefined);
        yield { id };
      }
      await resolveAfter(clock, 100, undefined);
    }
    await run(clock, balancer.ingest(source(), { batch: { maxRecords: 100, lingerMs: 12 }, send }));
    // The first batch opened at t = 1 and went at t = 13 with what had come by then.
    expect(sent).toEqual([
      { at: 13, ids: [0, 1, 2], bytes: 0 },
      { at: 28, ids: [3, 4, 5], bytes: 0 },
      { at: 43, ids: [6, 7], bytes: 0 },
    ]);
  });

  it('does not wait for the linger when the source ends', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const { sent, send } = recorder(clock);
    async function* source(): AsyncGenerator<Rec> {
      yield { id: 0 };
      await resolveAfter(clock, 2, undefined);
      yield { id: 1 };
      await resolveAfter(clock, 3, undefined);
    }
    const summary = await run(
      clock,
      balancer.ingest(source(), { batch: { maxRecords: 100, lingerMs: 1_000 }, send }),
    );
    expect(sent).toEqual([{ at: 5, ids: [0, 1], bytes: 0 }]);
    expect(summary.durationMs).toBe(6);
  });

  it('a linger of 0 sends what came in the same turn together', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const { sent, send } = recorder(clock);
    async function* source(): AsyncGenerator<Rec> {
      for (let id = 0; id < 6; id++) {
        if (id % 3 === 0) await resolveAfter(clock, 10, undefined);
        yield { id };
      }
    }
    await run(clock, balancer.ingest(source(), { batch: { maxRecords: 100, lingerMs: 0 }, send }));
    expect(sent.map((s) => [s.at, s.ids])).toEqual([
      [10, [0, 1, 2]],
      [20, [3, 4, 5]],
    ]);
  });
});
