/**
 * A `'failed'` listener that calls `stream.destroy()` while the stream refuses a record (after the
 * first failure): `_write` stores the write's callback as "held" *after* the refusal, i.e. after
 * `_destroy` already ran and released the held write, so nothing ever calls it. Node then never
 * calls that write's callback nor `end(cb)` (errorBuffer skips while a write is in progress), and
 * `writableLength` stays 1.
 */
import { describe, expect, it } from 'vitest';
import type { RecordWriteStream } from '../../src/index.js';
import { failAfter, resolveAfter, tick } from '../helpers.js';
import { fleet, ManualClock, type Rec } from './helpers.js';

const refused = (id: number) => Object.assign(new Error(`refused ${id}`), { retryable: false });

describe("write stream destroyed from a 'failed' listener during a refusal", () => {
  it('every write callback and the end() callback are still called', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, r: Rec) =>
        r.id === 0 ? failAfter(clock, 1, refused(0)) : resolveAfter(clock, 50, undefined),
    }) as RecordWriteStream<Rec>;
    // The listener stops the stream as soon as a record is refused ("not sent").
    stream.on('failed', (r: Rec) => {
      if (r.id !== 0) stream.destroy();
    });
    stream.on('error', () => {});
    const called: number[] = [];
    stream.write({ id: 0 }, () => called.push(0));
    stream.write({ id: 1 }, () => called.push(1));
    await tick(clock, 5); // record 0 failed; record 1 still in flight, so the stream is open
    stream.write({ id: 2 }, () => called.push(2)); // refused → 'failed' → destroy()
    let endCalledBack = false;
    stream.end(() => {
      endCalledBack = true;
    });
    await tick(clock, 500);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(3); // holds: every record taken is accounted
    // Node (Writable, which docs/reference.md promises): write's callback is called "once this chunk of data
    // is flushed" or with an error; test/stream/callbacks.test.ts pins "every write callback is
    // called once the stream errored" for the same stream.
    expect(called.sort()).toEqual([0, 1, 2]);
    expect(endCalledBack).toBe(true);
    expect(stream.writableLength).toBe(0);
  });
});
