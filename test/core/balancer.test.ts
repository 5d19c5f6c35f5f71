import { describe, expect, it } from 'vitest';
import {
  Balancer,
  BalancerClosedError,
  ConfigError,
  consistentHash,
  type FailureEvent,
  isShardwiseError,
  leastInFlight,
  MissingKeyError,
  NoShardAvailableError,
  type PickEvent,
  type Picker,
  PickerError,
  type PickRequest,
  p2c,
  peakEwma,
  QueueFullError,
  type RunContext,
  random,
  roundRobin,
  type ShardState,
  type SuccessEvent,
  TimeoutError,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import {
  failAfter,
  fakeShard,
  flush,
  makeBalancer,
  resolveAfter,
  shardsOf,
  type TestBalancerOptions,
  tick,
  track,
} from '../helpers.js';

const make = makeBalancer;

describe('run', () => {
  it('resolves with the value of fn, which gets the shard and ctx (attempt 1, live signal)', async () => {
    const { balancer } = make({ picker: roundRobin() });
    let seenShard: ShardState<string> | undefined;
    let seenCtx: RunContext | undefined;
    const value = await balancer.run(async (shard, ctx) => {
      seenShard = shard;
      seenCtx = ctx;
      return 42;
    });
    expect(value).toBe(42);
    expect(seenShard!.id).toBe('a');
    expect(seenShard!.target).toBe('t-a');
    expect(seenShard).toBe(balancer.shards[0]);
    expect(seenCtx!.attempt).toBe(1);
    expect(seenCtx!.signal).toBeInstanceOf(AbortSignal);
    expect(seenCtx!.signal.aborted).toBe(false);
  });

  it('calls fn synchronously when a slot is free (fast path)', () => {
    const { balancer } = make();
    let called = false;
    void balancer.run(async () => {
      called = true;
    });
    expect(called).toBe(true);
    expect(balancer.stats().inFlight).toBe(1);
  });

  it('a fn that throws synchronously rejects the run with that error', async () => {
    const { balancer } = make({ retry: false });
    const boom = new Error('sync boom');
    await expect(
      balancer.run(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(balancer.stats()).toMatchObject({ inFlight: 0, completed: 0, failed: 1 });
  });

  it('a fn that returns a non-promise value still resolves', async () => {
    const { balancer } = make();
    await expect(balancer.run((() => 'plain') as never)).resolves.toBe('plain');
  });

  it('rejects a non-function fn with ConfigError', async () => {
    const { balancer } = make();
    await expect(balancer.run('nope' as never)).rejects.toBeInstanceOf(TypeError);
    await expect(balancer.run('nope' as never)).rejects.toThrow(
      '`fn` must be a function, got "nope" (string)',
    );
  });
});

describe('admission and queueing', () => {
  it('picks when a slot frees: the third run goes to the shard that freed', async () => {
    const { clock, balancer } = make({ picker: roundRobin(), maxInFlightPerShard: 1 });
    const picks: string[] = [];
    balancer.on('pick', (e) => picks.push(e.shard.id));
    const r1 = balancer.run((s) => resolveAfter(clock, 10, s.id));
    const r2 = balancer.run((s) => resolveAfter(clock, 5, s.id));
    const r3 = balancer.run((s) => resolveAfter(clock, 5, s.id));
    expect(picks).toEqual(['a', 'b']);
    expect(balancer.stats().queued).toBe(1);
    await tick(clock, 4);
    expect(picks).toEqual(['a', 'b']);
    await tick(clock, 1); // b frees at 5
    expect(picks).toEqual(['a', 'b', 'b']);
    expect(balancer.stats().queued).toBe(0);
    await tick(clock, 5);
    expect(await Promise.all([r1, r2, r3])).toEqual(['a', 'b', 'b']);
  });

  it('with leastInFlight, a queued run takes the slot that freed first', async () => {
    const { clock, balancer } = make({ picker: leastInFlight(), maxInFlightPerShard: 2 }, [
      'a',
      'b',
      'c',
    ]);
    const results: Promise<string>[] = [];
    const durations = [30, 30, 30, 30, 10, 30, 5];
    for (const ms of durations) results.push(balancer.run((s) => resolveAfter(clock, ms, s.id)));
    expect(balancer.stats().inFlight).toBe(6);
    expect(balancer.stats().queued).toBe(1);
    const busy = balancer.stats().shards.map((s) => s.inFlight);
    expect(busy).toEqual([2, 2, 2]);
    await tick(clock, 10); // the 10 ms run ends: its shard takes the queued run
    const fifth = await results[4]!;
    expect(balancer.stats().queued).toBe(0);
    await tick(clock, 5);
    expect(await results[6]!).toBe(fifth);
  });

  it('starts queued runs in FIFO order', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1 }, ['only']);
    const started: number[] = [];
    const all = Array.from({ length: 6 }, (_, i) =>
      balancer.run(() => {
        started.push(i);
        return resolveAfter(clock, 1, i);
      }),
    );
    expect(started).toEqual([0]);
    expect(balancer.stats().queued).toBe(5);
    for (let t = 1; t <= 6; t++) {
      await tick(clock, 1);
      expect(started).toHaveLength(Math.min(6, t + 1));
      expect(balancer.stats().queued).toBe(Math.max(0, 5 - t));
    }
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await Promise.all(all)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('maxInFlight caps calls across all shards', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 10, maxInFlight: 2 }, ['a', 'b', 'c']);
    const all = Array.from({ length: 5 }, (_, i) => balancer.run(() => resolveAfter(clock, 10, i)));
    expect(balancer.stats()).toMatchObject({ inFlight: 2, queued: 3 });
    await tick(clock, 10);
    expect(balancer.stats()).toMatchObject({ inFlight: 2, queued: 1, completed: 2 });
    await tick(clock, 10);
    expect(balancer.stats()).toMatchObject({ inFlight: 1, queued: 0, completed: 4 });
    await tick(clock, 10);
    expect(await Promise.all(all)).toEqual([0, 1, 2, 3, 4]);
    expect(balancer.stats()).toMatchObject({ inFlight: 0, queued: 0, completed: 5 });
  });

  it("overflow 'reject': a run past maxQueued rejects at once with QueueFullError", async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1, maxQueued: 2, overflow: 'reject' }, [
      'a',
    ]);
    const running = balancer.run(() => resolveAfter(clock, 10, 0));
    const q1 = balancer.run(() => resolveAfter(clock, 10, 1));
    const q2 = balancer.run(() => resolveAfter(clock, 10, 2));
    expect(balancer.stats().queued).toBe(2);
    const full = track(balancer.run(() => resolveAfter(clock, 10, 3)));
    await flush();
    expect(full.settled).toBe(true);
    expect(full.ok).toBe(false);
    expect(full.error).toBeInstanceOf(QueueFullError);
    expect((full.error as QueueFullError).code).toBe('SHARDWISE_QUEUE_FULL');
    expect((full.error as QueueFullError).maxQueued).toBe(2);
    expect(isShardwiseError(full.error, 'SHARDWISE_QUEUE_FULL')).toBe(true);
    expect(balancer.stats().queued).toBe(2);
    await tick(clock, 10);
    // one queued run started: there is room for one more again
    expect(balancer.stats().queued).toBe(1);
    const fits = balancer.run(() => resolveAfter(clock, 10, 4));
    expect(balancer.stats().queued).toBe(2);
    await tick(clock, 30);
    expect(await Promise.all([running, q1, q2, fits])).toEqual([0, 1, 2, 4]);
    expect(balancer.stats()).toMatchObject({ completed: 4, queued: 0 });
  });

  it("overflow 'reject' holds for keyed runs too: a run that would wait in its home's line past maxQueued is refused", async () => {
    const { clock, balancer } = make({
      picker: consistentHash(),
      maxInFlightPerShard: 1,
      maxQueued: 1,
      overflow: 'reject',
    });
    const home = balancer.homeOf('k')!;
    const other = ['a', 'b'].find((id) => id !== home)!;
    const otherKey = Array.from({ length: 64 }, (_, i) => `o${i}`).find(
      (k) => balancer.homeOf(k) === other,
    )!;
    const running = balancer.run(() => resolveAfter(clock, 10, 'first'), { key: 'k' });
    const parked = balancer.run(() => resolveAfter(clock, 10, 'second'), { key: 'k' });
    expect(balancer.stats().queued).toBe(1);
    // The queue proper is empty: only the home's line holds a run. The old check looked at the
    // queue alone, and this run waited in the line, queued 2 of maxQueued 1.
    const full = track(balancer.run(() => resolveAfter(clock, 10, 'third'), { key: 'k' }));
    await flush();
    expect(full.ok).toBe(false);
    expect(full.error).toBeInstanceOf(QueueFullError);
    expect(balancer.stats()).toMatchObject({ queued: 1, refused: 1, failed: 0 });
    // A run whose home has room still starts at once: nothing waits for it.
    const elsewhere = balancer.run(() => resolveAfter(clock, 10, 'other'), { key: otherKey });
    expect(balancer.stats().inFlight).toBe(2);
    // An unkeyed run that would wait while the line holds maxQueued is refused the same way,
    // and counted once, as refused (it used to count as failed).
    const unkeyed = track(balancer.run(() => resolveAfter(clock, 10, 'unkeyed')));
    await flush();
    expect(unkeyed.error).toBeInstanceOf(QueueFullError);
    expect(balancer.stats()).toMatchObject({ queued: 1, refused: 2, failed: 0 });
    await tick(clock, 30);
    expect(await Promise.all([running, parked, elsewhere])).toEqual(['first', 'second', 'other']);
    expect(balancer.stats()).toMatchObject({ completed: 3, failed: 0, refused: 2, queued: 0 });
  });

  it('stats().refused counts every run() call turned away before admission, and only those', async () => {
    const { clock, balancer } = make(
      { maxInFlightPerShard: 1, maxQueued: 1, overflow: 'reject', retry: false },
      ['a'],
    );
    const outcomes = [
      track(balancer.run(() => resolveAfter(clock, 10, 'ok'))),
      track(balancer.run(() => resolveAfter(clock, 10, 'queued'))),
      track(balancer.run(() => resolveAfter(clock, 10, 'full'))),
      track(balancer.run(42 as never)),
      track(balancer.run(async () => 'bad options', { timeoutMs: -1 })),
      track(balancer.run(async () => 'aborted', { signal: AbortSignal.abort(new Error('gone')) })),
    ];
    await tick(clock, 30);
    outcomes.push(
      track(
        balancer.run(() => {
          throw new Error('fails');
        }),
      ),
    );
    await tick(clock, 10);
    await balancer.close();
    outcomes.push(track(balancer.run(async () => 'closed')));
    await flush();
    expect(outcomes.map((o) => o.settled)).toEqual(outcomes.map(() => true));
    expect(outcomes.map((o) => o.ok)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    const stats = balancer.stats();
    // Refused: full, not a function, bad options, aborted, closed. Failed: the run that threw.
    expect(stats).toMatchObject({ completed: 2, failed: 1, refused: 5 });
    expect(stats.completed + stats.failed + stats.refused).toBe(outcomes.length);
  });

  it("overflow 'wait': accepts past maxQueued, emits saturated, ready() waits until queued < maxQueued", async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1, maxQueued: 2 }, ['a']);
    const saturated: unknown[] = [];
    let readyEvents = 0;
    balancer.on('saturated', (e) => saturated.push(e));
    balancer.on('ready', () => readyEvents++);
    const runs = Array.from({ length: 4 }, (_, i) =>
      balancer.run(() => resolveAfter(clock, 10, i)),
    );
    expect(balancer.stats().queued).toBe(3);
    expect(saturated).toEqual([{ queued: 2, maxQueued: 2 }]);
    const ready = track(balancer.ready());
    await flush();
    expect(ready.settled).toBe(false);
    await tick(clock, 10); // one starts: queued 2, still not < 2
    expect(balancer.stats().queued).toBe(2);
    expect(ready.settled).toBe(false);
    expect(readyEvents).toBe(0);
    await tick(clock, 10); // queued 1
    expect(balancer.stats().queued).toBe(1);
    expect(ready.settled).toBe(true);
    expect(readyEvents).toBe(1);
    // ready() now resolves at once
    const again = track(balancer.ready());
    await flush();
    expect(again.settled).toBe(true);
    await tick(clock, 20);
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(readyEvents).toBe(1);
  });

  it('drain() resolves when every admitted run has settled, and drained fires', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1, retry: false });
    let drainedEvents = 0;
    balancer.on('drained', () => drainedEvents++);
    const ok = balancer.run(() => resolveAfter(clock, 10, 'ok'));
    const bad = track(balancer.run(() => failAfter(clock, 20, new Error('x'))));
    const queued = balancer.run(() => resolveAfter(clock, 5, 'q'));
    const drained = track(balancer.drain());
    await tick(clock, 10);
    expect(drained.settled).toBe(false);
    await tick(clock, 5);
    expect(drained.settled).toBe(false);
    expect(drainedEvents).toBe(0);
    await tick(clock, 5);
    expect(drained.settled).toBe(true);
    expect(drainedEvents).toBe(1);
    expect(await ok).toBe('ok');
    expect(await queued).toBe('q');
    expect(bad.ok).toBe(false);
    // drain() with nothing pending resolves at once
    const idle = track(balancer.drain());
    await flush();
    expect(idle.settled).toBe(true);
  });
});

describe('abort and timeouts', () => {
  it('a queued run whose signal aborts leaves the queue at once and rejects with the reason', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1 }, ['a']);
    const first = balancer.run(() => resolveAfter(clock, 10, 1));
    const controller = new AbortController();
    let called = false;
    const queued = track(
      balancer.run(
        async () => {
          called = true;
        },
        { signal: controller.signal },
      ),
    );
    const behind = balancer.run(() => resolveAfter(clock, 10, 3));
    expect(balancer.stats().queued).toBe(2);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect(balancer.stats().queued).toBe(1);
    await flush();
    expect(queued.error).toBe(reason);
    await tick(clock, 10);
    await tick(clock, 10);
    expect(await Promise.all([first, behind])).toEqual([1, 3]);
    expect(called).toBe(false);
    expect(balancer.stats()).toMatchObject({ completed: 2, failed: 1, queued: 0, inFlight: 0 });
  });

  it('a run whose signal is already aborted rejects with its reason and never calls fn', async () => {
    const { balancer } = make();
    const reason = new Error('before');
    let called = false;
    await expect(
      balancer.run(
        async () => {
          called = true;
        },
        { signal: AbortSignal.abort(reason) },
      ),
    ).rejects.toBe(reason);
    expect(called).toBe(false);
  });

  it("a running run's ctx.signal aborts with the caller's reason and the run rejects with it", async () => {
    const { clock, balancer } = make();
    const controller = new AbortController();
    let ctxSignal: AbortSignal | undefined;
    const run = track(
      balancer.run(
        (_s, ctx) => {
          ctxSignal = ctx.signal;
          return resolveAfter(clock, 100, 'late');
        },
        { signal: controller.signal, idempotent: true },
      ),
    );
    await tick(clock, 10);
    expect(balancer.stats().inFlight).toBe(1);
    const reason = new Error('stop');
    controller.abort(reason);
    expect(ctxSignal!.aborted).toBe(true);
    expect(ctxSignal!.reason).toBe(reason);
    expect(balancer.stats().inFlight).toBe(0);
    await flush();
    expect(run.error).toBe(reason);
    await tick(clock, 100); // the fn resolving later changes nothing
    expect(run.count).toBe(1);
    expect(balancer.stats()).toMatchObject({ completed: 0, failed: 1, retries: 0 });
  });

  it('balancer timeoutMs aborts ctx.signal with TimeoutError and the run rejects with it', async () => {
    const { clock, balancer } = make({ timeoutMs: 100, retry: false });
    let ctxSignal: AbortSignal | undefined;
    const run = track(
      balancer.run((_s, ctx) => {
        ctxSignal = ctx.signal;
        return new Promise(() => {}); // never settles
      }),
    );
    await tick(clock, 99);
    expect(run.settled).toBe(false);
    expect(ctxSignal!.aborted).toBe(false);
    await tick(clock, 1);
    expect(ctxSignal!.aborted).toBe(true);
    expect(ctxSignal!.reason).toBeInstanceOf(TimeoutError);
    expect(run.error).toBe(ctxSignal!.reason);
    const error = run.error as TimeoutError;
    expect(error.code).toBe('SHARDWISE_TIMEOUT');
    expect(error.timeoutMs).toBe(100);
    expect(error.shardId).toBe(balancer.stats().shards.find((s) => s.requests === 1)!.id);
    expect(balancer.stats()).toMatchObject({ inFlight: 0, failed: 1 });
  });

  it('a per-run timeoutMs overrides the balancer’s (non-idempotent run: not retried)', async () => {
    const { clock, balancer } = make({ timeoutMs: 1_000 });
    const run = track(
      balancer.run((_s, ctx) => resolveAfter(clock, 500, ctx.attempt), { timeoutMs: 50 }),
    );
    await tick(clock, 49);
    expect(run.settled).toBe(false);
    await tick(clock, 1);
    expect(run.error).toBeInstanceOf(TimeoutError);
    expect((run.error as TimeoutError).timeoutMs).toBe(50);
    expect(balancer.stats().retries).toBe(0);
  });

  it('a run that finishes before its timeout is not aborted', async () => {
    const { clock, balancer } = make({ timeoutMs: 100 });
    let ctxSignal: AbortSignal | undefined;
    const run = balancer.run((_s, ctx) => {
      ctxSignal = ctx.signal;
      return resolveAfter(clock, 99, 'in time');
    });
    await tick(clock, 99);
    expect(await run).toBe('in time');
    await tick(clock, 10);
    expect(ctxSignal!.aborted).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('close', () => {
  it('close() drains: waits for running and queued runs, then new runs reject', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1 }, ['a']);
    const running = balancer.run(() => resolveAfter(clock, 10, 'r'));
    const queued = balancer.run(() => resolveAfter(clock, 10, 'q'));
    const closing = track(balancer.close());
    expect(balancer.closed).toBe(true);
    const late = track(balancer.run(async () => 'late'));
    await flush();
    expect(late.error).toBeInstanceOf(BalancerClosedError);
    expect((late.error as BalancerClosedError).code).toBe('SHARDWISE_CLOSED');
    await tick(clock, 10);
    expect(closing.settled).toBe(false);
    await tick(clock, 10);
    expect(closing.settled).toBe(true);
    expect(await running).toBe('r');
    expect(await queued).toBe('q');
    expect(balancer.stats()).toMatchObject({ completed: 2, failed: 0 });
    // ready() does not hang after close
    const ready = track(balancer.ready());
    await flush();
    expect(ready.settled).toBe(true);
  });

  it('close({ drain: false }) rejects queued runs and aborts running ones with BalancerClosedError', async () => {
    const { clock, balancer } = make({ maxInFlightPerShard: 1 }, ['a']);
    let ctxSignal: AbortSignal | undefined;
    const running = track(
      balancer.run((_s, ctx) => {
        ctxSignal = ctx.signal;
        return resolveAfter(clock, 10, 'r');
      }),
    );
    let queuedCalled = false;
    const queued = track(
      balancer.run(async () => {
        queuedCalled = true;
      }),
    );
    const closing = track(balancer.close({ drain: false }));
    expect(ctxSignal!.aborted).toBe(true);
    expect(ctxSignal!.reason).toBeInstanceOf(BalancerClosedError);
    await flush();
    expect(closing.settled).toBe(true);
    expect(running.error).toBeInstanceOf(BalancerClosedError);
    expect(queued.error).toBeInstanceOf(BalancerClosedError);
    expect(queuedCalled).toBe(false);
    expect(balancer.stats()).toMatchObject({ inFlight: 0, queued: 0, completed: 0, failed: 2 });
    await tick(clock, 10);
    expect(running.count).toBe(1);
    await expect(balancer.run(async () => 1)).rejects.toBeInstanceOf(BalancerClosedError);
  });

  it('close() validates its options, rejecting the promise it returns (it does not throw)', async () => {
    const { balancer } = make();
    const bad = [{ drain: 'no' }, { now: true }, { timeoutMs: -1 }];
    const returned = bad.map((options) => balancer.close(options as never));
    await expect(returned[0]).rejects.toThrow(/`drain` must be a boolean/);
    await expect(returned[1]).rejects.toThrow(/close options.now/);
    await expect(returned[2]).rejects.toBeInstanceOf(ConfigError);
    // Nothing was closed by a refused call.
    expect(balancer.closed).toBe(false);
    await expect(balancer.run(async () => 'still open')).resolves.toBe('still open');
  });
});

describe('wrap', () => {
  it('passes arguments through, computes key and bytes from them, and honours idempotent', async () => {
    const clock = new ManualClock();
    const keys: unknown[] = [];
    const picker: Picker = {
      name: 'spy',
      pick(shards, request) {
        keys.push(request.key);
        return shards[0];
      },
    };
    const { balancer } = makeBalancer({
      clock,
      shards: [
        { id: 'a', target: 'ta' },
        { id: 'b', target: 'tb' },
      ],
      picker,
      random: seededRandom(2),
      retry: { backoff: { baseMs: 0, maxMs: 0 } },
    });
    const seen: { args: unknown[]; bytes: number; attempt: number }[] = [];
    const put = balancer.wrap(
      async (shard, ctx, id: string, body: string) => {
        seen.push({ args: [id, body], bytes: shard.bytesInFlight, attempt: ctx.attempt });
        if (ctx.attempt === 1) throw new Error('first try fails');
        return `${shard.id}:${id}:${body}`;
      },
      { key: (id) => `k-${id}`, idempotent: true, bytes: (_id, body) => body.length },
    );
    await expect(put('r1', 'hello')).resolves.toBe('b:r1:hello');
    expect(seen).toEqual([
      { args: ['r1', 'hello'], bytes: 5, attempt: 1 },
      { args: ['r1', 'hello'], bytes: 5, attempt: 2 },
    ]);
    expect(keys).toEqual(['k-r1', 'k-r1']);
    expect(balancer.stats().shards.map((s) => s.inFlight)).toEqual([0, 0]);
    expect(balancer.shards.map((s) => s.bytesInFlight)).toEqual([0, 0]);
  });

  it('a wrapped function is not idempotent by default (a generic error is not retried)', async () => {
    const { balancer } = make();
    const boom = new Error('boom');
    const call = balancer.wrap(async () => {
      throw boom;
    });
    await expect(call()).rejects.toBe(boom);
    expect(balancer.stats().retries).toBe(0);
  });

  it('an extractor that throws rejects that call only: the wrapped function never throws', async () => {
    const { balancer } = make({ picker: consistentHash() });
    const malformed = new Error('row without an id');
    const extractors = {
      key: (row: { id?: string }) => {
        if (row.id === undefined) throw malformed;
        return row.id;
      },
      bytes: (row: { id?: string }) => {
        if (row.id === 'no-bytes') throw malformed;
        return 1;
      },
      require: (row: { id?: string }) => {
        if (row.id === 'no-rule') throw malformed;
        return undefined;
      },
    };
    const put = balancer.wrap(
      async (shard, _ctx, row: { id?: string }) => `${shard.id}:${row.id}`,
      extractors,
    );
    const rows = [{ id: 'r1' }, {}, { id: 'no-bytes' }, { id: 'no-rule' }, { id: 'r2' }];
    // A caller's loop with .catch() per call: before, the throw escaped the loop at the second row.
    const outcomes = rows.map((row) => track(put(row)));
    await flush();
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, false, false, true]);
    expect(outcomes.filter((o) => o.ok === false).map((o) => o.error)).toEqual([
      malformed,
      malformed,
      malformed,
    ]);
    expect(outcomes[4]!.value).toBe(`${balancer.homeOf('r2')}:r2`);
    // The three calls turned away count as refused, like run() calls with bad options.
    expect(balancer.stats()).toMatchObject({
      inFlight: 0,
      queued: 0,
      completed: 2,
      failed: 0,
      refused: 3,
    });
  });

  it('validates its options', () => {
    const { balancer } = make();
    expect(() => balancer.wrap(async () => 1, { key: 'id' } as never)).toThrow(
      /`wrap.key` must be a function/,
    );
    expect(() => balancer.wrap(async () => 1, { retries: 2 } as never)).toThrow(
      /wrap options.retries/,
    );
  });
});

describe('pickers that break the contract', () => {
  function withPicker(pick: Picker['pick'], options: TestBalancerOptions<string> = {}) {
    return make({ picker: { name: 'custom', pick }, ...options });
  }

  it('a picker returning undefined rejects the run with NoShardAvailableError', async () => {
    const { balancer } = withPicker(() => undefined);
    const error = await balancer.run(async () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoShardAvailableError);
    expect((error as NoShardAvailableError).code).toBe('SHARDWISE_NO_SHARD');
    expect((error as Error).message).toContain('custom');
    expect(balancer.stats()).toMatchObject({ failed: 1, inFlight: 0, queued: 0 });
    await balancer.drain();
  });

  it('a picker returning a foreign object rejects the run with PickerError', async () => {
    const foreign = fakeShard('a', 0);
    const { balancer } = withPicker(() => foreign);
    const error = await balancer.run(async () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PickerError);
    expect((error as Error).message).toContain('shard "a"');
    expect(balancer.stats().shards.map((s) => s.requests)).toEqual([0, 0]);
    await balancer.drain();
  });

  it('a picker returning a shard at its cap (not offered) rejects with PickerError, never a hang', async () => {
    let sticky: ShardState | undefined;
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'a', target: 'ta' },
        { id: 'b', target: 'tb' },
      ],
      picker: { name: 'sticky', pick: (shards) => sticky ?? shards[0] },
      maxInFlightPerShard: 1,
      random: seededRandom(3),
    });
    const first = balancer.run(() => resolveAfter(clock, 10, 'first'));
    sticky = balancer.shards[0]; // a is at its cap: only b is offered
    const offered: string[][] = [];
    balancer.on('pick', (e) => offered.push([e.shard.id]));
    const second = track(balancer.run(() => resolveAfter(clock, 10, 'second')));
    await flush();
    expect(second.error).toBeInstanceOf(PickerError);
    expect(offered).toEqual([]);
    await tick(clock, 10);
    expect(await first).toBe('first');
    expect(balancer.stats()).toMatchObject({ completed: 1, failed: 1, inFlight: 0, queued: 0 });
  });

  it('a picker returning a shard at its cap for a queued run settles it when it is pumped', async () => {
    let sticky: ShardState | undefined;
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'a', target: 'ta' },
        { id: 'b', target: 'tb' },
      ],
      picker: roundRobin(),
      maxInFlightPerShard: 1,
      random: seededRandom(3),
    });
    const a = balancer.run(() => resolveAfter(clock, 10, 'a'));
    const b = balancer.run(() => resolveAfter(clock, 5, 'b'));
    const queued = track(balancer.run(() => resolveAfter(clock, 1, 'q')));
    // From now on the picker insists on a, which is still at its cap when b frees.
    sticky = balancer.shards[0];
    (balancer.picker as { pick: Picker['pick'] }).pick = (shards) => sticky ?? shards[0];
    await tick(clock, 5);
    expect(queued.error).toBeInstanceOf(PickerError);
    await tick(clock, 5);
    expect(await Promise.all([a, b])).toEqual(['a', 'b']);
    await balancer.drain();
  });

  it('a picker that throws rejects the run with PickerError holding the cause', async () => {
    const cause = new Error('picker bug');
    const { balancer } = withPicker(() => {
      throw cause;
    });
    const error = await balancer.run(async () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PickerError);
    expect((error as PickerError).cause).toBe(cause);
    expect((error as Error).message).toContain('picker bug');
    await balancer.drain();
  });

  it('a picker that throws a shardwise error has it passed through', async () => {
    const missing = new MissingKeyError('custom');
    const { balancer } = withPicker(() => {
      throw missing;
    });
    await expect(balancer.run(async () => 1)).rejects.toBe(missing);
  });

  it('a picker returning null rejects the run with PickerError, and drain() still resolves', async () => {
    const { balancer } = withPicker(() => null as never);
    const run = track(balancer.run(async () => 1));
    await flush();
    expect(run.settled).toBe(true);
    expect(run.error).toBeInstanceOf(PickerError);
    const drained = track(balancer.drain());
    await flush();
    expect(drained.settled).toBe(true);
    expect(balancer.stats()).toMatchObject({ failed: 1, inFlight: 0, queued: 0 });
  });
});

describe('events', () => {
  it('pick, success and failure carry their payloads', async () => {
    const { clock, balancer } = make({ picker: roundRobin(), retry: false });
    const picks: PickEvent[] = [];
    const successes: SuccessEvent[] = [];
    const failures: FailureEvent[] = [];
    balancer.on('pick', (e) => picks.push({ ...e }));
    balancer.on('success', (e) => successes.push(e));
    balancer.on('failure', (e) => failures.push(e));
    const boom = new Error('boom');
    const ok = balancer.run(() => resolveAfter(clock, 25, 'ok'), { key: 'k1' });
    const bad = track(balancer.run(() => failAfter(clock, 40, boom)));
    await tick(clock, 25);
    await tick(clock, 15);
    expect(await ok).toBe('ok');
    expect(bad.error).toBe(boom);
    expect(picks).toHaveLength(2);
    expect(picks[0]!.shard.id).toBe('a');
    expect(picks[0]).toMatchObject({ attempt: 1, key: 'k1' });
    expect(picks[1]!.shard.id).toBe('b');
    expect(picks[1]).toMatchObject({ attempt: 1, key: undefined });
    expect(successes).toEqual([{ shardId: 'a', attempt: 1, latencyMs: 25 }]);
    expect(failures).toEqual([
      { shardId: 'b', attempt: 1, latencyMs: 40, error: boom, willRetry: false },
    ]);
  });
});

describe('stats', () => {
  it('has the contract’s shape and figures that add up', async () => {
    const { clock, balancer } = make({
      picker: roundRobin(),
      retry: false,
      maxInFlightPerShard: 2,
    });
    const initial = balancer.stats();
    // The contract's fields, exactly (the snapshot may grow fields, never lose these).
    expect({
      queued: initial.queued,
      inFlight: initial.inFlight,
      completed: initial.completed,
      failed: initial.failed,
      retries: initial.retries,
      spills: initial.spills,
      budgetExhausted: initial.budgetExhausted,
      panic: initial.panic,
      retrying: initial.retrying,
      displaced: initial.displaced,
      shards: initial.shards,
    }).toEqual({
      retrying: 0,
      displaced: { total: 0, capped: 0, ejected: 0, retry: 0, bounded: 0 },
      queued: 0,
      inFlight: 0,
      completed: 0,
      failed: 0,
      retries: 0,
      budgetExhausted: 0,
      spills: 0,
      panic: false,
      shards: [
        {
          id: 'a',
          inFlight: 0,
          ewmaMs: 30,
          requests: 0,
          failures: 0,
          ejected: false,
          ejections: 0,
          limit: 2,
          displaced: { total: 0, capped: 0, ejected: 0, retry: 0, bounded: 0 },
          bytes: { raw: 0, wire: 0, received: 0 },
        },
        {
          id: 'b',
          inFlight: 0,
          ewmaMs: 30,
          requests: 0,
          failures: 0,
          ejected: false,
          ejections: 0,
          limit: 2,
          displaced: { total: 0, capped: 0, ejected: 0, retry: 0, bounded: 0 },
          bytes: { raw: 0, wire: 0, received: 0 },
        },
      ],
    });
    const outcomes = [
      track(balancer.run(() => resolveAfter(clock, 40, 1))), // a
      track(balancer.run(() => failAfter(clock, 40, new Error('x')))), // b
      track(balancer.run(() => resolveAfter(clock, 40, 3))), // a
      track(balancer.run(() => resolveAfter(clock, 40, 4))), // b
      track(balancer.run(() => resolveAfter(clock, 40, 5))), // queued
    ];
    expect(balancer.stats()).toMatchObject({ queued: 1, inFlight: 4 });
    expect(balancer.stats().shards.map((s) => s.inFlight)).toEqual([2, 2]);
    await tick(clock, 40);
    await tick(clock, 40);
    expect(outcomes.every((o) => o.settled)).toBe(true);
    const stats = balancer.stats();
    expect(stats).toMatchObject({ queued: 0, inFlight: 0, completed: 4, failed: 1, retries: 0 });
    expect(stats.completed + stats.failed).toBe(outcomes.length);
    expect(stats.shards.map((s) => s.requests)).toEqual([3, 2]);
    expect(stats.shards.map((s) => s.failures)).toEqual([0, 1]);
    expect(stats.shards.reduce((n, s) => n + s.requests, 0)).toBe(5);
    // every contract field is present, per shard too
    for (const field of ['queued', 'inFlight', 'completed', 'failed', 'retries', 'spills']) {
      expect(stats).toHaveProperty(field);
    }
    expect(Object.keys(stats.shards[0]!).sort()).toEqual(
      [
        'bytes',
        'displaced',
        'ejected',
        'ejections',
        'ewmaMs',
        'failures',
        'id',
        'inFlight',
        'limit',
        'requests',
      ].sort(),
    );
  });

  it('feeds latency from the injected clock: a 40 ms run gives ewmaMs 40', async () => {
    const { clock, balancer } = make({ picker: roundRobin() }, ['a']);
    const run = balancer.run(() => resolveAfter(clock, 40, 'x'));
    await tick(clock, 40);
    await run;
    expect(balancer.stats().shards[0]!.ewmaMs).toBe(40);
  });

  it('stats() is a snapshot, not a live view', async () => {
    const { clock, balancer } = make({}, ['a']);
    const before = balancer.stats();
    const run = balancer.run(() => resolveAfter(clock, 1, 1));
    expect(before.inFlight).toBe(0);
    expect(before.shards[0]!.inFlight).toBe(0);
    await tick(clock, 1);
    await run;
  });
});

describe('pick requests', () => {
  it('the picker sees attempt, key, totalInFlight and the balancer’s random source', async () => {
    const rng = seededRandom(9);
    const requests: PickRequest[] = [];
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: {
        name: 'spy',
        pick(shards, request) {
          requests.push({ ...request });
          return shards[shards.length - 1];
        },
      },
      random: rng,
    });
    const key = new Uint8Array([1, 2]);
    const r1 = balancer.run(() => resolveAfter(clock, 5, 1), { key });
    const r2 = balancer.run(() => resolveAfter(clock, 5, 2), { key: 'x' });
    // A source of `seededRandom` is the balancer's own, as given: a pick's call of it stays one
    // function (a wrapper there too would make the call site polymorphic, and every draw
    // allocate its number).
    expect(balancer.random).toBe(rng);
    expect(requests).toEqual([
      { key, attempt: 1, random: rng, totalInFlight: 0, now: 0 },
      { key: 'x', attempt: 1, random: rng, totalInFlight: 1, now: 0 },
    ]);
    // A source of the caller's own is held to [0, 1), its values inside unchanged.
    const own = seededRandom(4);
    const twin = seededRandom(4);
    const held = new Balancer<string>({ shards: [{ id: 'a', target: 'a' }], random: () => own() });
    expect(held.random).not.toBe(own);
    for (let i = 0; i < 100; i++) expect(held.random()).toBe(twin());
    await tick(clock, 5);
    await Promise.all([r1, r2]);
  });

  it.each([
    ['1 (a generator that divides by 2^32 − 1)', () => 1],
    ['1.5', () => 1.5],
    ['−0.5', () => -0.5],
    ['NaN', () => Number.NaN],
    ['Infinity', () => Number.POSITIVE_INFINITY],
  ])('a random source that returns %s skews picks but fails no run', async (_label, source) => {
    const makers = [
      () => p2c(),
      () => p2c({ choices: 3 }),
      () => peakEwma(),
      () => random(),
      () => leastInFlight(),
    ];
    for (const make of makers) {
      const { clock, balancer } = makeBalancer({
        shards: shardsOf(['a', 'b', 'c', 'd']),
        picker: make(),
        random: source,
        retry: { attempts: 3, backoff: { baseMs: 10, maxMs: 20 }, budget: false },
      });
      const value = balancer.random();
      expect(value >= 0 && value < 1, `${balancer.picker.name}: ${value}`).toBe(true);
      // Half the runs fail their first attempt and are retried (the backoff draws from the
      // source too).
      const runs = Array.from({ length: 8 }, (_, i) =>
        balancer.run(
          (shard, { attempt }) =>
            i % 2 === 1 && attempt === 1
              ? failAfter(clock, 1, new Error('once'))
              : resolveAfter(clock, 1, shard.id),
          { idempotent: true },
        ),
      );
      await tick(clock, 100);
      const settled = await Promise.allSettled(runs);
      const rejected = settled.filter((r) => r.status === 'rejected');
      expect(
        rejected.map((r) => String((r as PromiseRejectedResult).reason)),
        balancer.picker.name,
      ).toEqual([]);
      expect(balancer.stats().completed).toBe(8);
    }
  });
});
