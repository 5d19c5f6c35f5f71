import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { type RecordWriteStream, WriteFailedError } from '../../src/index.js';
import { failAfter, flush, resolveAfter, tick, track } from '../helpers.js';
import { fleet, ManualClock, type Rec, records } from './helpers.js';

function account(stream: RecordWriteStream<Rec>) {
  const failed: Rec[] = [];
  stream.on('failed', (r: Rec) => failed.push(r));
  let closes = 0;
  stream.on('close', () => closes++);
  const errors: unknown[] = [];
  stream.on('error', (e) => errors.push(e));
  let finishes = 0;
  stream.on('finish', () => finishes++);
  return {
    failed,
    errors,
    get closes() {
      return closes;
    },
    get finishes() {
      return finishes;
    },
  };
}

describe('write stream lifecycle', () => {
  it('end() with nothing written: finish, settled with zeros', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      send: async () => {},
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    stream.end();
    await tick(clock, 10);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(0);
    expect(a.finishes).toBe(1);
    expect(a.closes).toBe(1);
  });

  it('destroy() mid-flight: records taken settle exactly once, settled resolves, close fires once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 1, maxQueued: 2 });
    const sent: number[] = [];
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, r: Rec) => {
        sent.push(r.id);
        return resolveAfter(clock, 10, undefined);
      },
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    for (const r of records(10)) stream.write(r);
    await flush();
    stream.destroy();
    await tick(clock, 100);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(10);
    expect(s.written).toBe(sent.length);
    expect(a.failed.length).toBe(s.failed);
    expect(a.closes).toBe(1);
    expect(a.errors).toEqual([]);
    expect(balancer.stats().inFlight).toBe(0);
  });

  it('destroy(err) mid-flight: error emitted once, every record accounted', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 1, maxQueued: 2 });
    const stream = balancer.createWriteStream<Rec>({
      send: () => resolveAfter(clock, 10, undefined),
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    for (const r of records(10)) stream.write(r);
    await flush();
    const boom = new Error('boom');
    stream.destroy(boom);
    await tick(clock, 100);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(10);
    expect(a.errors).toEqual([boom]);
    expect(a.closes).toBe(1);
    for (const f of s.failures) expect((f.error as WriteFailedError).cause).toBe(boom);
  });

  it('destroy() while a batch lingers: records in it are written or failed', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const batches: number[][] = [];
    const stream = balancer.createWriteStream<Rec>({
      batch: { maxRecords: 100, lingerMs: 1_000 },
      send: async (_s: unknown, recs: Rec[]) => {
        batches.push(recs.map((r) => r.id));
      },
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    for (const r of records(5)) stream.write(r);
    await flush();
    stream.destroy();
    await tick(clock, 5_000);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(5);
    expect(a.closes).toBe(1);
  });

  it('batched final flush on end()', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const batches: number[][] = [];
    const stream = balancer.createWriteStream<Rec>({
      batch: { maxRecords: 3, lingerMs: 1_000_000 },
      send: async (_s: unknown, recs: Rec[]) => {
        batches.push(recs.map((r) => r.id));
      },
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    for (const r of records(7)) stream.write(r);
    stream.end();
    await tick(clock, 10);
    const s = await stream.settled;
    expect(s.written).toBe(7);
    expect(batches.flat().sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(a.finishes).toBe(1);
  });

  it('write after end: ERR_STREAM_WRITE_AFTER_END, record not counted', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      send: () => resolveAfter(clock, 5, undefined),
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    stream.write({ id: 0 });
    stream.end();
    let cbErr: unknown;
    stream.write({ id: 1 }, (e) => {
      cbErr = e;
    });
    await tick(clock, 50);
    const s = await stream.settled;
    expect((cbErr as { code?: string }).code).toBe('ERR_STREAM_WRITE_AFTER_END');
    expect(s.written).toBe(1);
    expect(s.failed).toBe(0);
    expect(a.closes).toBe(1);
  });

  it('writing undefined in object mode is a record like any other', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const seen: unknown[] = [];
    const stream = balancer.createWriteStream<unknown>({
      send: async (_s, r) => {
        seen.push(r);
      },
    }) as RecordWriteStream<unknown>;
    stream.write(undefined);
    stream.end();
    await tick(clock, 10);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(1);
    expect(() => stream.write(null)).toThrow();
  });

  it('a send that throws synchronously fails its record; the stream errors with WriteFailedError', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const boom = Object.assign(new Error('sync'), { retryable: false });
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, r: Rec) => {
        if (r.id === 1) throw boom;
        return resolveAfter(clock, 5, undefined);
      },
    }) as RecordWriteStream<Rec>;
    const done = track(pipeline(Readable.from(records(5)), stream));
    await tick(clock, 100);
    expect(done.ok).toBe(false);
    expect(done.error).toBeInstanceOf(WriteFailedError);
    const s = await stream.settled;
    expect(s.failures.some((f) => f.record.id === 1)).toBe(true);
  });

  it('pipeline with a source that errors midway: callback gets the source error once, records settle', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const boom = new Error('source broke');
    async function* source() {
      for (let id = 0; id < 5; id++) yield { id };
      throw boom;
    }
    const stream = balancer.createWriteStream<Rec>({
      send: () => resolveAfter(clock, 5, undefined),
    }) as RecordWriteStream<Rec>;
    const errs: unknown[] = [];
    const done = track(
      pipeline(Readable.from(source()), stream).catch((e) => {
        errs.push(e);
        throw e;
      }),
    );
    await tick(clock, 100);
    expect(done.error).toBe(boom);
    expect(errs.length).toBe(1);
    const s = await stream.settled;
    expect(s.written + s.failed).toBe(5);
  });

  it('pipeline with an abort signal', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 1, maxQueued: 1 });
    const ac = new AbortController();
    const stream = balancer.createWriteStream<Rec>({
      send: () => resolveAfter(clock, 5, undefined),
    }) as RecordWriteStream<Rec>;
    const done = track(pipeline(Readable.from(records(100)), stream, { signal: ac.signal }));
    await tick(clock, 12);
    ac.abort();
    await tick(clock, 100);
    expect(done.ok).toBe(false);
    expect((done.error as Error).name).toBe('AbortError');
    const s = await stream.settled;
    expect(s.written + s.failed).toBeGreaterThan(0);
    expect(balancer.stats().inFlight).toBe(0);
  });

  it('balancer closed without drain during writes: stream errors with WriteFailedError; all accounted', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { maxInFlightPerShard: 1, maxQueued: 2 });
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, _r, { signal }) =>
        new Promise((resolve, reject) => {
          clock.setTimer(() => resolve(undefined), 50);
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    }) as RecordWriteStream<Rec>;
    const a = account(stream);
    let pulled = 0;
    function* src() {
      for (let id = 0; id < 100; id++) {
        pulled++;
        yield { id };
      }
    }
    const done = track(pipeline(Readable.from(src()), stream));
    await tick(clock, 5);
    void balancer.close({ drain: false });
    await tick(clock, 100);
    expect(done.ok).toBe(false);
    expect(done.error).toBeInstanceOf(WriteFailedError);
    const s = await stream.settled;
    expect(s.written).toBe(0);
    expect(a.failed.length).toBe(s.failed);
    // Every record taken was reported; none beyond what the source gave.
    expect(s.failed).toBeGreaterThan(0);
    expect(s.failed).toBeLessThanOrEqual(pulled);
    expect(a.closes).toBe(1);
  });

  it("a 'failed' listener that throws", async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      send: (_s, r: Rec) =>
        r.id === 1
          ? failAfter(clock, 1, Object.assign(new Error('x'), { retryable: false }))
          : resolveAfter(clock, 5, undefined),
    }) as RecordWriteStream<Rec>;
    const listenerErr = new Error('listener');
    stream.on('failed', () => {
      throw listenerErr;
    });
    const done = track(pipeline(Readable.from(records(5)), stream));
    await tick(clock, 100);
    expect(done.ok).toBe(false);
    const s = await stream.settled;
    expect(s.failed).toBeGreaterThan(0);
    // eslint-disable-next-line no-console
    console.log('failed-listener-throw error:', done.error);
  });

  it('summary at finish is consistent with events', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      send: () => resolveAfter(clock, 3, undefined),
    }) as RecordWriteStream<Rec>;
    let atFinish: { written: number; failed: number; durationMs: number } | undefined;
    stream.on('finish', () => {
      atFinish = {
        written: stream.summary.written,
        failed: stream.summary.failed,
        durationMs: stream.summary.durationMs,
      };
    });
    const done = track(pipeline(Readable.from(records(20)), stream));
    await tick(clock, 200);
    expect(done.ok).toBe(true);
    expect(atFinish?.written).toBe(20);
    expect(atFinish?.durationMs).toBeGreaterThan(0);
  });

  it('cork/uncork', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const stream = balancer.createWriteStream<Rec>({
      batch: { maxRecords: 4, lingerMs: 10 },
      send: async () => {},
    }) as RecordWriteStream<Rec>;
    stream.cork();
    for (const r of records(10)) stream.write(r);
    stream.uncork();
    stream.end();
    await tick(clock, 100);
    const s = await stream.settled;
    expect(s.written).toBe(10);
  });

  it('Writable sanity', () => {
    expect(Writable).toBeDefined();
  });
});
