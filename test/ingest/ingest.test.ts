/**
 * `ingest()` on virtual time: failed records are listed, never thrown; retries are counted;
 * `onProgress` is called on the balancer's clock; bad options are `ConfigError`s.
 */
import { describe, expect, it } from 'vitest';
import {
  Balancer,
  ConfigError,
  IngestError,
  type IngestProgress,
  type IngestSummary,
  RetriesExhaustedError,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { failAfter, makeBalancer, resolveAfter, shardsOf, tick } from '../helpers.js';

interface Rec {
  id: number;
}

function fleet(clock: ManualClock) {
  return makeBalancer({
    clock,
    shards: shardsOf(['a', 'b']),
    maxInFlightPerShard: 5,
    maxQueued: 10,
    random: seededRandom(3),
  }).balancer;
}

/** Runs `promise` to completion by moving virtual time 1 ms at a time (bounded). */
async function settle<R>(clock: ManualClock, promise: Promise<R>, limitMs = 100_000): Promise<R> {
  let done = false;
  let value: R | undefined;
  let error: unknown;
  let failed = false;
  promise.then(
    (v) => {
      done = true;
      value = v;
    },
    (e: unknown) => {
      done = true;
      failed = true;
      error = e;
    },
  );
  for (let t = 0; !done; t++) {
    if (t > limitMs) throw new Error(`not settled after ${limitMs} ms of virtual time`);
    await tick(clock, 1);
  }
  if (failed) throw error;
  return value as R;
}

describe('ingest', () => {
  it('lists records whose send fails non-retryably, and never throws', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const records: Rec[] = Array.from({ length: 100 }, (_, id) => ({ id }));
    const bad = new Map<number, Error>();
    const summary = await settle(
      clock,
      balancer.ingest(records, {
        send: (_shard, record) => {
          if (record.id % 10 === 3) {
            const error = Object.assign(new Error(`record ${record.id} rejected`), {
              retryable: false,
            });
            bad.set(record.id, error);
            return failAfter(clock, 5, error);
          }
          return resolveAfter(clock, 10, undefined);
        },
        bytes: () => 100,
      }),
    );
    expect(summary.written).toBe(90);
    expect(summary.failed).toBe(10);
    expect(summary.errors.map((e) => e.record.id).sort((a, b) => a - b)).toEqual([
      3, 13, 23, 33, 43, 53, 63, 73, 83, 93,
    ]);
    for (const { record, error } of summary.errors) {
      expect(record).toBe(records[record.id]); // the very record, not a copy
      expect(error).toBe(bad.get(record.id)); // not retryable: the error itself
    }
    expect(summary.retries).toBe(0);
    expect(summary.bytes).toBe(90 * 100); // bytes of records written only
    expect(summary.perShard.a! + summary.perShard.b!).toBe(90);
    expect(summary.durationMs).toBeGreaterThan(0);
    expect(summary.durationMs).toBe(clock.now()); // measured on the balancer's clock
    await balancer.close();
  });

  it('counts retries, and lists a record that exhausted them with RetriesExhaustedError', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const records: Rec[] = Array.from({ length: 20 }, (_, id) => ({ id }));
    let flakyCalls = 0;
    const summary = await settle(
      clock,
      balancer.ingest(records, {
        send: (_shard, record, { attempt }) => {
          if (record.id === 7) return failAfter(clock, 1, new Error('shard hiccup')); // always
          if (record.id === 8 && attempt === 1) {
            flakyCalls++;
            return failAfter(clock, 1, new Error('once'));
          }
          return resolveAfter(clock, 2, undefined);
        },
      }),
    );
    expect(summary.written).toBe(19);
    expect(summary.failed).toBe(1);
    expect(summary.errors[0]!.record.id).toBe(7);
    const error = summary.errors[0]!.error as RetriesExhaustedError;
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error.attempts).toHaveLength(3); // the default attempts, first included
    expect(flakyCalls).toBe(1);
    expect(summary.retries).toBe(2 + 1); // record 7 twice, record 8 once
    expect(balancer.stats().retries).toBe(3);
    await balancer.close();
  });

  it('a non-idempotent ingest does not retry a record whose call may have been sent', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let calls = 0;
    const summary = await settle(
      clock,
      balancer.ingest([{ id: 1 }], {
        idempotent: false,
        send: () => {
          calls++;
          return failAfter(clock, 1, new Error('reset mid-request'));
        },
      }),
    );
    expect(calls).toBe(1);
    expect(summary.failed).toBe(1);
    expect(summary.retries).toBe(0);
  });

  it('calls onProgress at most every progressIntervalMs of balancer time, and once at the end', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const calls: IngestProgress[] = [];
    const records: Rec[] = Array.from({ length: 200 }, (_, id) => ({ id }));
    const summary: IngestSummary<Rec> = await settle(
      clock,
      balancer.ingest(records, {
        send: () => resolveAfter(clock, 10, undefined),
        bytes: () => 3,
        onProgress: (p) => calls.push({ ...p }),
        progressIntervalMs: 50,
      }),
    );
    // 200 records, 10 at a time, 10 ms each: 200 ms of virtual time.
    expect(summary.durationMs).toBe(200);
    expect(calls.length).toBeGreaterThanOrEqual(4);
    const last = calls.at(-1)!;
    expect(last).toMatchObject({ written: 200, failed: 0, bytes: 600, queued: 0, inFlight: 0 });
    expect(last.elapsedMs).toBe(200);
    for (let i = 1; i < calls.length - 1; i++) {
      expect(calls[i]!.elapsedMs - calls[i - 1]!.elapsedMs).toBeGreaterThanOrEqual(50);
      expect(calls[i]!.written).toBeGreaterThanOrEqual(calls[i - 1]!.written);
    }
    // Progress mid-run: some written, not all.
    expect(calls[0]!.written).toBeGreaterThan(0);
    expect(calls[0]!.written).toBeLessThan(200);
    await balancer.close();
  });

  it('stops reading the source when its signal aborts; admitted records still settle', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const controller = new AbortController();
    let pulled = 0;
    function* source(): Generator<Rec> {
      for (let id = 0; id < 1_000; id++) {
        pulled++;
        if (id === 50) controller.abort();
        yield { id };
      }
    }
    const error = await settle(
      clock,
      balancer.ingest(source(), {
        send: () => resolveAfter(clock, 3, undefined),
        signal: controller.signal,
      }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(pulled).toBe(51);
    expect(error).toBeInstanceOf(IngestError);
    const { summary, kind, cause } = error as IngestError<Rec>;
    expect(kind).toBe('aborted');
    expect(cause).toBe(controller.signal.reason);
    // The 51st record was taken when the abort was seen: reported failed, not dropped.
    expect(summary.written).toBe(50);
    expect(summary.failed).toBe(1);
    expect(summary.failures[0]!.record.id).toBe(50);
    expect(summary.failures[0]!.error).toBe(controller.signal.reason);
  });

  it('takes an async iterable, holding at most maxQueued records waiting', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let peakQueued = 0;
    let saturated = 0;
    balancer.on('saturated', () => saturated++);
    const sample = () => {
      peakQueued = Math.max(peakQueued, balancer.stats().queued);
    };
    async function* source(): AsyncGenerator<Rec> {
      for (let id = 0; id < 300; id++) {
        sample();
        yield { id };
      }
    }
    const summary = await settle(
      clock,
      balancer.ingest(source(), {
        send: () => {
          sample();
          return resolveAfter(clock, 4, undefined);
        },
      }),
    );
    expect(summary.written).toBe(300);
    expect(saturated).toBeGreaterThan(0); // the queue filled …
    expect(peakQueued).toBeLessThanOrEqual(10); // … and never past maxQueued
  });
});

describe('ingest and createWriteStream option validation', () => {
  const balancer = new Balancer<string>({ shards: [{ id: 'a', target: 'a' }] });
  const send = async () => undefined;

  it('createWriteStream throws ConfigError naming the field', () => {
    expect(() => balancer.createWriteStream({ send, sned: send } as never)).toThrow(ConfigError);
    expect(() => balancer.createWriteStream({ send, sned: send } as never)).toThrow(
      /`createWriteStream\.sned` is not a known option/,
    );
    expect(() => balancer.createWriteStream({ send: 'post' } as never)).toThrow(
      /`createWriteStream\.send` must be a function/,
    );
    expect(() => balancer.createWriteStream({} as never)).toThrow(ConfigError);
    expect(() => balancer.createWriteStream({ send, key: 'id' } as never)).toThrow(
      /`createWriteStream\.key`/,
    );
    expect(() => balancer.createWriteStream({ send, bytes: 10 } as never)).toThrow(
      /`createWriteStream\.bytes`/,
    );
    expect(() => balancer.createWriteStream({ send, idempotent: 'yes' } as never)).toThrow(
      /`createWriteStream\.idempotent`/,
    );
    expect(() => balancer.createWriteStream(undefined as never)).toThrow(ConfigError);
    // The stream's options are not ingest's.
    expect(() => balancer.createWriteStream({ send, onProgress: () => {} } as never)).toThrow(
      /`createWriteStream\.onProgress` is not a known option/,
    );
  });

  it('ingest rejects with ConfigError naming the field (and sends nothing)', async () => {
    let sent = 0;
    const counting = async () => {
      sent++;
    };
    const cases: [unknown, unknown, RegExp][] = [
      [[1], { send: counting, sned: counting }, /`ingest\.sned` is not a known option/],
      [[1], { send: 42 }, /`ingest\.send` must be a function/],
      [[1], {}, /`ingest\.send`/],
      [[1], { send: counting, onProgress: 'log' }, /`ingest\.onProgress`/],
      [[1], { send: counting, progressIntervalMs: -1 }, /`ingest\.progressIntervalMs`/],
      [42, { send: counting }, /`source` must be an iterable or an async iterable/],
      [null, { send: counting }, /`source`/],
    ];
    for (const [source, options, message] of cases) {
      const error = await balancer.ingest(source as never, options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, String(message)).toBeInstanceOf(ConfigError);
      expect(error, String(message)).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(message);
    }
    expect(sent).toBe(0);
  });
});
