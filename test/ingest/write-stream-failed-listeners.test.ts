import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import type { RecordWriteStream } from '../../src/index.js';
import { failAfter, resolveAfter, tick, track } from '../helpers.js';
import { fleet, ManualClock, type Rec, records } from './helpers.js';

const refused = (id: number) => Object.assign(new Error(`refused ${id}`), { retryable: false });

describe("write stream: 'failed' listeners and onFailed", () => {
  it("onFailed hears of every failed record even when a 'failed' listener throws", async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 2, maxQueued: 4 });
    const heard: number[] = [];
    const stream = balancer.createWriteStream<Rec>({
      // Every odd record is refused.
      send: (_s, r: Rec) =>
        r.id % 2 === 1 ? failAfter(clock, 1, refused(r.id)) : resolveAfter(clock, 5, undefined),
      onFailed: (r: Rec) => heard.push(r.id),
    }) as RecordWriteStream<Rec>;
    stream.on('failed', () => {
      throw new Error('a careless listener');
    });
    const done = track(pipeline(Readable.from(records(10)), stream));
    await tick(clock, 200);
    expect(done.settled).toBe(true);
    const s = await stream.settled;
    expect(s.failed).toBeGreaterThan(0);
    // docs/reference.md: "`failed` counts them all, and `onFailed` hears of each."
    expect(heard.sort((a, b) => a - b)).toEqual(
      s.failures.map((f) => f.record.id).sort((a, b) => a - b),
    );
  });
});
