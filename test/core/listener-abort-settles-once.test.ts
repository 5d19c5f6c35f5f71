/**
 * The run is aborted synchronously from code the balancer itself calls between the end
 * of an attempt and the run's settlement — an event listener (`success`, `failure`, `retry`), or
 * the attempt's own `ctx.signal` listener when `timeoutMs` fires. That is the natural way to
 * write "stop the job on the first failure / timeout": one controller for the job, aborted (or
 * the balancer closed, or the failing shard removed) from a listener.
 *
 * Promises attacked (docs/reference.md, `run`): "settles exactly once"; stats: `completed`, `failed`,
 * `refused` "add up to every call that settled"; `drain()` "resolves when every admitted run has
 * settled"; `inFlight` back to 0.
 */
import { describe, expect, it } from 'vitest';
import { type Balancer, roundRobin } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { flush, makeBalancer, shardsOf, tick, track } from '../helpers.js';

function make(clock: ManualClock, timeoutMs?: number) {
  return makeBalancer({
    clock,
    shards: shardsOf(['a', 'b']),
    picker: roundRobin(),
    health: false,
    retry: { attempts: 3, backoff: { baseMs: 10, maxMs: 10 }, budget: false },
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  }).balancer;
}

/** An idempotent run whose every attempt fails, on `signal`; `calls()` counts its attempts. */
function alwaysFailing(balancer: Balancer<string>, signal: AbortSignal) {
  let calls = 0;
  const out = track(
    balancer.run(
      async () => {
        calls++;
        throw new Error('boom');
      },
      { signal, idempotent: true },
    ),
  );
  return { out, calls: () => calls };
}

/** At rest after one run that failed: nothing in flight or waiting, drained. */
const ONE_FAILED_AT_REST = {
  inFlight: 0,
  shardsInFlight: [0, 0],
  queued: 0,
  retrying: 0,
  completed: 0,
  failed: 1,
  drained: true,
};

/** The figures that must be back at rest, and drain() (bounded: one turn, on virtual time). */
async function rest(balancer: Balancer<string>) {
  const s = balancer.stats();
  const drained = track(balancer.drain());
  await flush();
  return {
    inFlight: s.inFlight,
    shardsInFlight: s.shards.map((x) => x.inFlight),
    queued: s.queued,
    retrying: s.retrying,
    completed: s.completed,
    failed: s.failed,
    drained: drained.settled,
  };
}

describe('abort from a listener, between the end of an attempt and settlement', () => {
  it("a 'failure' listener aborts the job's signal: one settlement, fn never called again, figures at rest", async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    const job = new AbortController();
    const reason = new Error('stop the job on the first failure');
    balancer.on('failure', () => job.abort(reason));
    const { out, calls } = alwaysFailing(balancer, job.signal);
    await tick(clock, 1_000);
    expect({ count: out.count, error: out.error, calls: calls() }).toEqual({
      count: 1,
      error: reason,
      calls: 1,
    });
    expect(await rest(balancer)).toEqual(ONE_FAILED_AT_REST);
    expect(clock.pendingTimers).toBe(0);
  });

  it("a 'retry' listener aborts the run's signal: the retry is not started, figures at rest", async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    const controller = new AbortController();
    balancer.on('retry', () => controller.abort('no retries for this one')); // a string reason
    const { out, calls } = alwaysFailing(balancer, controller.signal);
    await tick(clock, 1_000);
    expect({ count: out.count, error: out.error, calls: calls() }).toEqual({
      count: 1,
      error: 'no retries for this one',
      calls: 1,
    });
    expect(await rest(balancer)).toEqual(ONE_FAILED_AT_REST);
  });

  it("a 'success' listener aborts the run's signal (first success wins): the slot is freed once", async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    const controller = new AbortController();
    balancer.on('success', () => controller.abort(new Error('first success wins')));
    const out = track(balancer.run(async () => 'value', { signal: controller.signal }));
    await flush();
    expect(out.count).toBe(1);
    const figures = await rest(balancer);
    expect({ inFlight: figures.inFlight, shardsInFlight: figures.shardsInFlight }).toEqual({
      inFlight: 0,
      shardsInFlight: [0, 0],
    });
    // The attempt succeeded (and `success` said so) before the abort: the run's value stands.
    expect({
      ok: out.ok,
      value: out.value,
      completed: figures.completed,
      failed: figures.failed,
    }).toEqual({
      ok: true,
      value: 'value',
      completed: 1,
      failed: 0,
    });
  });

  it("a 'failure' listener closes the balancer without drain: the run is not restarted, drain() resolves", async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    balancer.on('failure', () => void balancer.close({ drain: false }));
    let calls = 0;
    const out = track(
      balancer.run(
        async () => {
          calls++;
          throw new Error('fatal');
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 1_000);
    expect({ count: out.count, calls }).toEqual({ count: 1, calls: 1 });
    expect(await rest(balancer)).toEqual(ONE_FAILED_AT_REST);
  });

  it("a 'failure' listener removes the failing shard without drain: removeShard() resolves, the run retries elsewhere", async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    const removed: string[] = [];
    balancer.on('shardRemoved', ({ shardId }) => removed.push(shardId));
    let removal: ReturnType<typeof track<void>> | undefined;
    balancer.once('failure', ({ shardId }) => {
      removal = track(balancer.removeShard(shardId, { drain: false }));
    });
    let calls = 0;
    const out = track(
      balancer.run(
        async () => {
          if (++calls === 1) throw new Error('connection refused');
          return 'written';
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 1_000);
    expect({ ok: out.ok, value: out.value, calls }).toEqual({
      ok: true,
      value: 'written',
      calls: 2,
    });
    expect({ ok: removal?.ok, error: removal?.error }).toEqual({ ok: true, error: undefined });
    expect(removed).toEqual(['a']); // the membership change is announced
  });
});

describe('timeoutMs racing the caller abort', () => {
  it("the attempt's ctx.signal listener aborts the job when the attempt times out: one settlement, figures at rest", async () => {
    const clock = new ManualClock();
    const balancer = make(clock, 100);
    const job = new AbortController();
    let calls = 0;
    const out = track(
      balancer.run(
        (_shard, ctx) => {
          calls++;
          // "If any call of the job times out, cancel the whole job."
          ctx.signal.addEventListener('abort', () => job.abort(ctx.signal.reason), { once: true });
          return new Promise<never>(() => {});
        },
        { signal: job.signal, idempotent: true },
      ),
    );
    // With the system clock, a throw here is an uncaught exception in a timer: the process exits.
    let thrown: unknown;
    try {
      await tick(clock, 1_000);
    } catch (error) {
      thrown = error;
    }
    expect(String(thrown ?? 'nothing thrown')).toBe('nothing thrown');
    expect(out.count).toBe(1);
    expect((out.error as Error).name).toBe('TimeoutError');
    expect(calls).toBe(1);
    expect(await rest(balancer)).toEqual(ONE_FAILED_AT_REST);
  });
});
