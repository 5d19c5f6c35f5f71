import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type RecordWriteStream, WriteFailedError } from '../../src/index.js';
import { failAfter, resolveAfter, tick } from '../helpers.js';
import { fleet, ManualClock, type Rec } from './helpers.js';

const refused = () => Object.assign(new Error('refused'), { retryable: false });

describe('write stream by hand: Node Writable callbacks once the stream failed', () => {
  it('end(cb) is called back (with the error) when the stream errors', async () => {
    const clock = new ManualClock();
    // One slot, one queued: the third write waits for room (its callback pending).
    const balancer = fleet(clock, { shards: 1, maxInFlightPerShard: 1, maxQueued: 1 });
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, r: Rec) =>
        r.id === 0 ? failAfter(clock, 10, refused()) : resolveAfter(clock, 50, undefined),
    }) as RecordWriteStream<Rec>;
    const errors: unknown[] = [];
    stream.on('error', (e) => errors.push(e));
    let closed = false;
    stream.on('close', () => {
      closed = true;
    });
    const writeCbs: unknown[] = [];
    for (let id = 0; id < 4; id++) stream.write({ id }, (e) => writeCbs.push(e ?? 'ok'));
    let endCb: unknown = 'not called';
    stream.end((e?: Error | null) => {
      endCb = e ?? null;
    });
    await tick(clock, 500);
    const s = await stream.settled;
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(WriteFailedError);
    expect(closed).toBe(true);
    expect(s.written + s.failed).toBe(4);
    // Node: writable.end(chunk, encoding, callback) — "callback: Callback for when the stream is
    // finished or errored".
    expect(endCb).toBeInstanceOf(Error);
  });

  it('write(chunk, cb): every write callback is called once the stream errored', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, maxInFlightPerShard: 1, maxQueued: 1 });
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, r: Rec) =>
        r.id === 0 ? failAfter(clock, 10, refused()) : resolveAfter(clock, 50, undefined),
    }) as RecordWriteStream<Rec>;
    stream.on('error', () => {});
    const writeCbs: unknown[] = [];
    for (let id = 0; id < 4; id++) stream.write({ id }, (e) => writeCbs.push(e ?? 'ok'));
    await tick(clock, 500);
    await stream.settled;
    expect(stream.destroyed).toBe(true);
    expect(writeCbs).toHaveLength(4);
  });

  it('control: a plain Node Writable whose write fails calls end(cb) and every write cb', async () => {
    let n = 0;
    const w = new Writable({
      objectMode: true,
      highWaterMark: 1,
      write(_chunk, _enc, cb) {
        n++;
        setImmediate(() => cb(n === 1 ? new Error('x') : null));
      },
    });
    w.on('error', () => {});
    const writeCbs: unknown[] = [];
    for (let id = 0; id < 4; id++) w.write({ id }, (e) => writeCbs.push(e ?? 'ok'));
    let endCb: unknown = 'not called';
    w.end((e?: Error | null) => {
      endCb = e ?? null;
    });
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(endCb).toBeInstanceOf(Error);
    expect(writeCbs).toHaveLength(4);
  });
});
