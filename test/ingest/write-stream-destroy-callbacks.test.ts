import { describe, expect, it } from 'vitest';
import type { RecordWriteStream } from '../../src/index.js';
import { flush, resolveAfter, tick } from '../helpers.js';
import { fleet, ManualClock, type Rec, records } from './helpers.js';

describe('write stream destroy()', () => {
  it('destroy() while a write waits for the balancer: every write callback is still called (as a Node Writable)', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 1, maxQueued: 1 });
    const stream = balancer.createWriteStream<Rec>({
      send: () => resolveAfter(clock, 10, undefined),
    }) as RecordWriteStream<Rec>;
    const called: number[] = [];
    // 2 records run, 1 queues (maxQueued), the 4th write waits for ready(), 4 stay in Node's buffer.
    for (const r of records(8)) stream.write(r, () => called.push(r.id));
    await flush();
    stream.destroy();
    await tick(clock, 1_000);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(8); // holds: every record accounted
    // A producer awaiting its write's callback must not hang: Node calls each one (the write in
    // progress with null, the buffered ones with ERR_STREAM_DESTROYED).
    expect(called.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(stream.writableLength).toBe(0);
  });
});
