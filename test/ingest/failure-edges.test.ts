/**
 * Attack tests on record ingestion: each states a documented promise and checks it.
 */
import { describe, expect, it } from 'vitest';
import {
  consistentHash,
  type RecordWriteStream,
  RetriesExhaustedError,
  type ShardState,
  WriteFailedError,
} from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, type Rec, records, run, settle } from './helpers.js';

describe('a write stream that keeps no failures', () => {
  it('keepFailures: 0 — the first failed record still makes the stream error with WriteFailedError', async () => {
    const clock = new ManualClock();
    const sent: number[] = [];
    const stream = fleet(clock).createWriteStream<Rec>({
      send: async (_shard, record) => {
        sent.push(record.id);
        await resolveAfter(clock, 1, undefined);
        if (record.id === 0) throw Object.assign(new Error('refused'), { retryable: false });
      },
      keepFailures: 0,
    }) as RecordWriteStream<Rec>;
    let failedEvents = 0;
    stream.on('failed', () => failedEvents++);
    let streamError: unknown;
    let finished = false;
    stream.on('error', (e) => {
      streamError = e;
    });
    stream.on('finish', () => {
      finished = true;
    });
    stream.write({ id: 0 });
    await settle(clock, resolveAfter(clock, 10, undefined)); // record 0 has failed by now
    expect(failedEvents).toBe(1);
    for (const r of records(5).slice(1)) stream.write(r);
    stream.end();
    const summary = await run(clock, stream.settled);
    await settle(clock, resolveAfter(clock, 10, undefined));
    expect(summary.failed).toBe(1);
    // Documented: the first failure makes the stream refuse new records (failed, unsent) and,
    // once what it took has settled, error with a WriteFailedError — keepFailures only bounds the list.
    expect({ finished, sent, isWriteFailed: streamError instanceof WriteFailedError }).toEqual({
      finished: false,
      sent: [0],
      isWriteFailed: true,
    });
  });

  it('control: the same stream with keepFailures: 1 errors and refuses', async () => {
    const clock = new ManualClock();
    const sent: number[] = [];
    const stream = fleet(clock).createWriteStream<Rec>({
      send: async (_shard, record) => {
        sent.push(record.id);
        await resolveAfter(clock, 1, undefined);
        if (record.id === 0) throw Object.assign(new Error('refused'), { retryable: false });
      },
      keepFailures: 1,
    }) as RecordWriteStream<Rec>;
    let streamError: unknown;
    stream.on('error', (e) => {
      streamError = e;
    });
    stream.write({ id: 0 });
    await settle(clock, resolveAfter(clock, 10, undefined));
    for (const r of records(5).slice(1)) stream.write(r);
    stream.end();
    await run(clock, stream.settled);
    await settle(clock, resolveAfter(clock, 10, undefined));
    expect(sent).toEqual([0]);
    expect(streamError).toBeInstanceOf(WriteFailedError);
  });
});

describe('record attempts across a home move', () => {
  it('a record moved out of a batch after whole-batch throws keeps those sends in its attempts', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 3,
      picker: consistentHash(),
      maxInFlightPerShard: 5,
      maxQueued: 100,
    });
    // keys spread over homes; find two keys that share a home now and move to different homes
    // once that home leaves
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    let pair: [string, string] | undefined;
    let gone: string | undefined;
    outer: for (const s of ['a', 'b', 'c']) {
      const on = keys.filter((k) => balancer.homeOf(k) === s);
      // simulate removal to learn the new homes
      const probe = fleet(new ManualClock(), {
        shards: 3,
        picker: consistentHash(),
      });
      void probe.removeShard(s, { drain: false });
      for (const x of on) {
        for (const y of on) {
          if (x !== y && probe.homeOf(x) !== probe.homeOf(y)) {
            pair = [x, y];
            gone = s;
            break outer;
          }
        }
      }
    }
    expect(pair).toBeDefined();
    const sendsOf = new Map<string, string[]>();
    let thrown = 0;
    const ingestion = balancer.ingest(
      [
        { id: 0, key: pair![0] },
        { id: 1, key: pair![1] },
      ],
      {
        key: (r) => r.key,
        batch: { maxRecords: 10, lingerMs: 1 },
        send: async (shard: ShardState<string>, batch: Rec[]) => {
          for (const r of batch) sendsOf.set(r.key!, [...(sendsOf.get(r.key!) ?? []), shard.id]);
          await resolveAfter(clock, 1, undefined);
          if (shard.id === gone) {
            thrown++;
            // the home leaves after its first failed send
            if (thrown === 1) void balancer.removeShard(gone!, { drain: false });
            throw Object.assign(new Error(`down ${shard.id}`), { retryable: true });
          }
          // every other shard refuses every record (retryable)
          return { failed: batch.map((_, index) => ({ index, retryable: true })) };
        },
      },
    );
    const summary = await run(clock, ingestion);
    expect(summary.written + summary.failed).toBe(2);
    // Documented: attempts 3 (the first included) count every send of a record, whole-batch
    // retries too — but not a send the balancer cut off itself (its shard removed without drain):
    // as for any run, that one is owed. Each record: the cut-off send on the home that left, then
    // three counted sends on its new home, and every one of the four listed.
    for (const [, shards] of sendsOf) {
      expect(shards).toHaveLength(4);
      expect(shards[0]).toBe(gone);
      expect(new Set(shards.slice(1)).size).toBe(1);
      expect(shards[1]).not.toBe(gone);
    }
    expect(summary.failures).toHaveLength(2);
    for (const f of summary.failures) {
      expect(f.error).toBeInstanceOf(RetriesExhaustedError);
      expect((f.error as RetriesExhaustedError).attempts).toHaveLength(4);
    }
  });
});
