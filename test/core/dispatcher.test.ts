/**
 * The dispatcher through its own API (`run`, `ready`, `drain`, `close`, `wake`,
 * `membershipChanged`, `abortAttempts`) over the real rooms it drives: how a run is admitted or
 * refused, started, queued in order, timed out, aborted, retried and settled exactly once — and
 * what it does with the changes an ended attempt returns: it hands them to its host once, after
 * the attempt's step is done, then serves its lines and pumps once (every line when the host says
 * so), with nothing calling back into it midway.
 */
import { describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/admission/run.js';
import {
  BalancerClosedError,
  ConfigError,
  PushBackError,
  QueueFullError,
  RetriesExhaustedError,
  ShardRemovedError,
  TimeoutError,
} from '../../src/base/errors.js';
import type { ShardState } from '../../src/base/types.js';
import type { ConcurrencyLimit } from '../../src/limits/types.js';
import { failAfter, flush, resolveAfter, tick, track } from '../helpers.js';
import { tablePicker } from '../routing/rooms.js';
import { dispatcherRooms } from './dispatcher-rooms.js';

/** A run function that records where each attempt went and hands its promise to the test. */
function recorder() {
  const starts: string[] = [];
  const contexts: RunContext[] = [];
  const pending: { resolve: (v: string) => void; reject: (e: unknown) => void }[] = [];
  const fn = (name: string) => (shard: ShardState<string>, ctx: RunContext) => {
    starts.push(`${name}@${shard.id}#${ctx.attempt}`);
    contexts.push(ctx);
    return new Promise<string>((resolve, reject) => pending.push({ resolve, reject }));
  };
  return { starts, contexts, pending, fn };
}

/** A limit that moves from `from` to `to` at its first sample. */
function stepLimit(from: number, to: number): ConcurrencyLimit {
  return {
    limit: from,
    onSample() {
      (this as { limit: number }).limit = to;
    },
  };
}

describe('Dispatcher: admission', () => {
  it('starts a run at once when a slot is free: fn runs before run() returns, with attempt 1', async () => {
    const { dispatcher, figures, shard } = dispatcherRooms({ ids: ['a', 'b'] });
    const { starts, pending, fn } = recorder();
    const result = track(dispatcher.run(fn('r1')));
    expect(starts).toEqual(['r1@a#1']);
    expect([dispatcher.inFlight, shard('a').inFlight]).toEqual([1, 1]);
    pending[0]!.resolve('done');
    await flush();
    expect(result.value).toBe('done');
    expect([dispatcher.inFlight, shard('a').inFlight, figures.completed]).toEqual([0, 0, 1]);
  });

  it('refuses before admission — not a function, a bad option, closed, an aborted signal — counted as refused', async () => {
    const { dispatcher, figures } = dispatcherRooms({ ids: ['a'] });
    const aborted = AbortSignal.abort(new Error('gone'));
    await expect(dispatcher.run('nope' as never)).rejects.toThrow(ConfigError);
    await expect(dispatcher.run(async () => 1, { bogus: true } as never)).rejects.toThrow(
      ConfigError,
    );
    await expect(dispatcher.run(async () => 1, { signal: aborted })).rejects.toThrow('gone');
    await dispatcher.close(true, Number.POSITIVE_INFINITY);
    await expect(dispatcher.run(async () => 1)).rejects.toThrow(BalancerClosedError);
    expect([figures.refused, figures.failed, figures.completed]).toEqual([4, 0, 0]);
  });

  it('queues runs past maxInFlight and starts them in arrival order as slots free', async () => {
    const { dispatcher } = dispatcherRooms({ ids: ['a', 'b'], options: { maxInFlight: 1 } });
    const { starts, pending, fn } = recorder();
    const runs = ['r1', 'r2', 'r3'].map((name) => track(dispatcher.run(fn(name))));
    expect([starts, dispatcher.queued]).toEqual([['r1@a#1'], 2]);
    pending[0]!.resolve('1');
    await flush();
    pending[1]!.resolve('2');
    await flush();
    expect(starts).toEqual(['r1@a#1', 'r2@b#1', 'r3@a#1']);
    expect(dispatcher.queued).toBe(0);
    pending[2]!.resolve('3');
    await flush();
    expect(runs.map((r) => r.value)).toEqual(['1', '2', '3']);
  });

  it('with overflow reject, refuses a run that would wait past maxQueued with QueueFullError', async () => {
    const { dispatcher, figures } = dispatcherRooms({
      ids: ['a'],
      options: { maxInFlight: 1, maxQueued: 1, overflow: 'reject' },
    });
    const { starts, fn } = recorder();
    track(dispatcher.run(fn('r1')));
    track(dispatcher.run(fn('r2')));
    const third = track(dispatcher.run(fn('r3')));
    await flush();
    expect(third.error).toBeInstanceOf(QueueFullError);
    expect([starts, dispatcher.queued, figures.refused, figures.failed]).toEqual([
      ['r1@a#1'],
      1,
      1,
      0,
    ]);
  });

  it('ready() waits while maxQueued runs wait, and resolves when one starts', async () => {
    const { dispatcher } = dispatcherRooms({
      ids: ['a'],
      options: { maxInFlight: 1, maxQueued: 1 },
    });
    const { pending, fn } = recorder();
    track(dispatcher.run(fn('r1')));
    track(dispatcher.run(fn('r2')));
    const ready = track(dispatcher.ready());
    await flush();
    expect(ready.settled).toBe(false);
    pending[0]!.resolve('1');
    await flush();
    expect(ready.settled).toBe(true);
  });
});

describe('Dispatcher: settled exactly once', () => {
  it('an attempt past timeoutMs fails the run once with TimeoutError; its late answer is ignored', async () => {
    const { clock, dispatcher, figures } = dispatcherRooms({
      ids: ['a'],
      options: { timeoutMs: 100, retry: false },
    });
    let signal: AbortSignal | undefined;
    const run = track(
      dispatcher.run((_shard, ctx) => {
        signal = ctx.signal;
        return resolveAfter(clock, 200, 'late');
      }),
    );
    await tick(clock, 100);
    expect(run.error).toBeInstanceOf(TimeoutError);
    expect(signal?.reason).toBeInstanceOf(TimeoutError);
    expect(dispatcher.inFlight).toBe(0);
    await tick(clock, 200);
    expect([run.count, figures.completed, figures.failed]).toEqual([1, 0, 1]);
  });

  it('a caller’s abort while running settles with its reason, frees the slot and starts the next run', async () => {
    const { dispatcher, figures } = dispatcherRooms({ ids: ['a'], options: { maxInFlight: 1 } });
    const { starts, contexts, pending, fn } = recorder();
    const controller = new AbortController();
    const first = track(dispatcher.run(fn('r1'), { signal: controller.signal, idempotent: true }));
    track(dispatcher.run(fn('r2')));
    controller.abort(new Error('caller'));
    expect(contexts[0]!.signal.aborted).toBe(true);
    expect(starts).toEqual(['r1@a#1', 'r2@a#1']);
    pending[0]!.resolve('late');
    await flush();
    expect((first.error as Error).message).toBe('caller');
    expect([first.count, figures.failed, figures.completed, figures.retries]).toEqual([1, 1, 0, 0]);
  });

  it('a caller’s abort while queued takes the run out of the queue; it never starts', async () => {
    const { dispatcher } = dispatcherRooms({
      ids: ['a'],
      options: { maxInFlight: 1, maxQueued: 1 },
    });
    const { starts, fn } = recorder();
    track(dispatcher.run(fn('r1')));
    const controller = new AbortController();
    const queued = track(dispatcher.run(fn('r2'), { signal: controller.signal }));
    const ready = track(dispatcher.ready());
    controller.abort(new Error('caller'));
    await flush();
    expect((queued.error as Error).message).toBe('caller');
    expect([dispatcher.queued, ready.settled, starts]).toEqual([0, true, ['r1@a#1']]);
  });

  it('close without drain settles queued and running runs with BalancerClosedError', async () => {
    const { dispatcher } = dispatcherRooms({ ids: ['a'], options: { maxInFlight: 1 } });
    const { contexts, fn } = recorder();
    const running = track(dispatcher.run(fn('r1')));
    const queued = track(dispatcher.run(fn('r2')));
    await dispatcher.close(false, Number.POSITIVE_INFINITY);
    expect(running.error).toBeInstanceOf(BalancerClosedError);
    expect(queued.error).toBeInstanceOf(BalancerClosedError);
    expect(contexts[0]!.signal.reason).toBeInstanceOf(BalancerClosedError);
    expect([dispatcher.inFlight, dispatcher.queued, dispatcher.closed]).toEqual([0, 0, true]);
  });

  it('drain() resolves when every admitted run settled; with a timeout, rejects naming those left', async () => {
    const { clock, dispatcher } = dispatcherRooms({ ids: ['a'] });
    const { pending, fn } = recorder();
    await dispatcher.drain();
    dispatcher.run(fn('r1')).catch(() => {});
    const bounded = track(dispatcher.drain(50));
    const open = track(dispatcher.drain());
    await tick(clock, 50);
    expect(bounded.error).toBeInstanceOf(TimeoutError);
    expect((bounded.error as Error).message).toContain('1 run(s) had not settled');
    expect(open.settled).toBe(false);
    pending[0]!.resolve('1');
    await flush();
    expect(open.settled).toBe(true);
  });
});

describe('Dispatcher: retries', () => {
  it('retries an idempotent run after its backoff on a shard it has not tried', async () => {
    const { clock, dispatcher, figures } = dispatcherRooms({
      ids: ['a', 'b'],
      options: { retry: { attempts: 2, backoff: { baseMs: 100, maxMs: 100 } } },
    });
    const seen: string[] = [];
    const run = track(
      dispatcher.run(
        (shard, ctx) => {
          seen.push(`${shard.id}#${ctx.attempt}`);
          return ctx.attempt === 1
            ? failAfter(clock, 10, new Error('500'))
            : resolveAfter(clock, 10, 'ok');
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 10);
    expect([dispatcher.retrying, dispatcher.inFlight, figures.retries]).toEqual([1, 0, 1]);
    await tick(clock, 1_000);
    expect(seen).toEqual(['a#1', 'b#2']);
    expect([run.value, dispatcher.retrying, figures.completed, figures.failed]).toEqual([
      'ok',
      0,
      1,
      0,
    ]);
  });

  it('does not retry a run that is not idempotent: it fails with its own error', async () => {
    const { dispatcher, figures } = dispatcherRooms({ ids: ['a', 'b'] });
    const error = new Error('500');
    const run = track(dispatcher.run(() => Promise.reject(error)));
    await flush();
    expect([run.error, run.count, figures.retries, figures.failed]).toEqual([error, 1, 0, 1]);
  });

  it('fails with RetriesExhaustedError listing every attempt once they are spent', async () => {
    const { clock, dispatcher } = dispatcherRooms({
      ids: ['a', 'b'],
      options: { retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 }, budget: false } },
    });
    const run = track(
      dispatcher.run(() => failAfter(clock, 5, new Error('500')), { idempotent: true }),
    );
    await tick(clock, 100);
    expect(run.error).toBeInstanceOf(RetriesExhaustedError);
    expect((run.error as RetriesExhaustedError).attempts.map((a) => a.shardId)).toEqual(['a', 'b']);
  });

  it('a shard removed without drain ends its attempts with ShardRemovedError, retried elsewhere', async () => {
    const { clock, dispatcher, membership } = dispatcherRooms({ ids: ['a', 'b'] });
    const reasons: unknown[] = [];
    const seen: string[] = [];
    const run = track(
      dispatcher.run(
        (shard, ctx) => {
          seen.push(`${shard.id}#${ctx.attempt}`);
          const off = ctx.onAbort((reason) => reasons.push(reason));
          return resolveAfter(clock, 10, shard.id).finally(off);
        },
        { idempotent: true },
      ),
    );
    await membership.remove('a', false);
    await tick(clock, 1_000);
    expect(seen).toEqual(['a#1', 'b#2']);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(ShardRemovedError);
    expect(run.value).toBe('b');
  });
});

describe('Dispatcher: what an ended attempt changed, acted on once', () => {
  it('a success that changed nothing asks the host nothing', async () => {
    const { dispatcher, calls } = dispatcherRooms({ ids: ['a'] });
    await dispatcher.run(async () => 'ok');
    expect(calls).toEqual([]);
  });

  it('a push-back is handed over once, after the run went to its backoff and freed its slot', async () => {
    const { clock, dispatcher, calls, shard } = dispatcherRooms({
      ids: ['a', 'b'],
      options: { retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 } } },
    });
    const run = track(
      dispatcher.run(
        (s, ctx) =>
          ctx.attempt === 1
            ? failAfter(clock, 5, new PushBackError(1_000))
            : resolveAfter(clock, 5, s.id),
        { idempotent: true },
      ),
    );
    await tick(clock, 5);
    expect(calls).toEqual([
      {
        shard: 'a',
        changes: { limit: undefined, health: undefined, pushedBack: true },
        inFlight: 0,
        retrying: 1,
        completed: 0,
        failed: 0,
        retries: 1,
      },
    ]);
    expect(shard('a').pushedBackAt(clock.now())).toBe(true);
    await tick(clock, 100);
    expect(run.value).toBe('b');
    expect(calls).toHaveLength(1);
  });

  it('an ejection is handed over once, after the run settled', async () => {
    const { dispatcher, calls, shard } = dispatcherRooms({
      ids: ['a', 'b'],
      options: { retry: false, health: { consecutiveFailures: 1 } },
    });
    await dispatcher.run(() => Promise.reject(new Error('500'))).catch(() => {});
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      shard: 'a',
      changes: { pushedBack: false, limit: undefined, health: { change: 'eject' } },
      inFlight: 0,
      failed: 1,
    });
    expect(shard('a').health.state).toBe('ejected');
  });

  it('a limit that moved is handed over once, with the limit before and after', async () => {
    const { dispatcher, calls, shard } = dispatcherRooms({
      ids: ['a'],
      options: { maxInFlightPerShard: stepLimit(4, 2) },
    });
    await dispatcher.run(async () => 'ok');
    expect(calls.map((c) => [c.shard, c.changes.limit, c.completed])).toEqual([
      ['a', { limit: 2, previous: 4 }, 1],
    ]);
    expect(shard('a').limit).toBe(2);
  });

  it('when the host says every line may go, lines at other homes are served; when not, only the shard’s own', async () => {
    for (const wakeAll of [true, false]) {
      // One limit shared by both shards, raised by the first sample (the balancer spreads it).
      const shared = stepLimit(1, 2);
      const rooms = dispatcherRooms({
        ids: ['a', 'b'],
        picker: tablePicker({ ka: 'a', kb: 'b' }, 'strict'),
        options: { maxInFlightPerShard: shared },
        changed: (_shard, changes) => {
          if (changes.limit !== undefined) rooms.availability.setLimit(rooms.shard('b'), 2);
          return wakeAll;
        },
      });
      const { starts, pending, fn } = recorder();
      const d = rooms.dispatcher;
      track(d.run(fn('a1'), { key: 'ka' }));
      track(d.run(fn('b1'), { key: 'kb' }));
      track(d.run(fn('a2'), { key: 'ka' }));
      track(d.run(fn('b2'), { key: 'kb' }));
      expect(starts).toEqual(['a1@a#1', 'b1@b#1']);
      pending[0]!.resolve('a1');
      await flush();
      expect(rooms.calls).toHaveLength(1);
      expect(starts).toEqual(
        wakeAll ? ['a1@a#1', 'b1@b#1', 'a2@a#1', 'b2@b#1'] : ['a1@a#1', 'b1@b#1', 'a2@a#1'],
      );
    }
  });

  it('a host that wakes the dispatcher from inside `changed` starts each waiting run once, within maxInFlight', async () => {
    const rooms = dispatcherRooms({
      ids: ['a', 'b'],
      options: { maxInFlight: 1, retry: false },
      changed: () => {
        rooms.dispatcher.wake();
        return true;
      },
    });
    const { starts, pending, fn } = recorder();
    track(rooms.dispatcher.run(fn('r1')));
    track(rooms.dispatcher.run(fn('r2')));
    track(rooms.dispatcher.run(fn('r3')));
    pending[0]!.reject(new PushBackError(100));
    await flush();
    expect(rooms.calls).toHaveLength(1);
    expect(starts).toEqual(['r1@a#1', 'r2@b#1']);
    expect([rooms.dispatcher.inFlight, rooms.dispatcher.queued]).toEqual([1, 1]);
  });
});

describe('Dispatcher: callers that act while an attempt ends', () => {
  it('a host that closes the dispatcher inside `changed` leaves no queued run to start', async () => {
    const rooms = dispatcherRooms({
      ids: ['a'],
      options: { maxInFlight: 1, retry: false },
      changed: () => {
        void rooms.dispatcher.close(false, Number.POSITIVE_INFINITY);
        return true;
      },
    });
    const { starts, pending, fn } = recorder();
    const first = track(rooms.dispatcher.run(fn('r1')));
    const queued = track(rooms.dispatcher.run(fn('r2')));
    pending[0]!.reject(new PushBackError(100));
    await flush();
    expect(starts).toEqual(['r1@a#1']);
    expect(first.error).toBeInstanceOf(PushBackError);
    expect(queued.error).toBeInstanceOf(BalancerClosedError);
    expect([rooms.dispatcher.inFlight, rooms.dispatcher.queued]).toEqual([0, 0]);
  });

  it('a `failure` listener that aborts the run stops its retry: it settles once, with the abort', async () => {
    const rooms = dispatcherRooms({ ids: ['a', 'b'] });
    const controller = new AbortController();
    rooms.events.on('failure', () => controller.abort(new Error('listener')));
    const { starts, pending, fn } = recorder();
    const run = track(
      rooms.dispatcher.run(fn('r1'), { idempotent: true, signal: controller.signal }),
    );
    pending[0]!.reject(new Error('500'));
    await flush();
    // Settled there and then: no backoff was begun for it.
    expect([run.settled, rooms.clock.pendingTimers]).toEqual([true, 0]);
    await tick(rooms.clock, 1_000);
    expect(starts).toEqual(['r1@a#1']);
    expect([(run.error as Error).message, run.count]).toEqual(['listener', 1]);
    expect([rooms.figures.failed, rooms.figures.retries, rooms.dispatcher.retrying]).toEqual([
      1, 0, 0,
    ]);
  });
});

describe('Dispatcher: user code runs once the step is done', () => {
  /** One shard taking one run at a time, three runs (one started, two waiting), then two shards more. */
  function twoWaiting() {
    const rooms = dispatcherRooms({ ids: ['a'], options: { maxInFlightPerShard: 1 } });
    const seen: string[] = [];
    const { fn } = recorder();
    const watched = (name: string) => (shard: ShardState<string>, ctx: RunContext) => {
      seen.push(`fn ${name}@${shard.id}: ${rooms.dispatcher.inFlight}`);
      return fn(name)(shard, ctx);
    };
    const runs = ['r1', 'r2', 'r3'].map((name) => track(rooms.dispatcher.run(watched(name))));
    seen.length = 0;
    const grow = () => rooms.membership.set(['a', 'b', 'c'].map((id) => ({ id, target: id })));
    return { rooms, seen, runs, grow };
  }

  it('a scan that starts two runs calls their `pick` listeners and `fn`s after it, in order', () => {
    const { rooms, seen, grow } = twoWaiting();
    rooms.events.on('pick', ({ shardId }) =>
      seen.push(`pick ${shardId}: ${rooms.dispatcher.inFlight}`),
    );
    void grow();
    // Both runs were started by the one scan before any of their user code ran.
    expect(seen).toEqual(['pick b: 3', 'fn r2@b: 3', 'pick c: 3', 'fn r3@c: 3']);
  });

  it('a `pick` listener that closes the dispatcher: no `fn` is called after it, every run settles once', async () => {
    const { rooms, seen, runs, grow } = twoWaiting();
    rooms.events.on('pick', () => void rooms.dispatcher.close(false, Number.POSITIVE_INFINITY));
    void grow();
    await flush();
    expect(seen).toEqual([]);
    expect(runs.map((r) => [r.count, (r.error as Error)?.name])).toEqual([
      [1, 'BalancerClosedError'],
      [1, 'BalancerClosedError'],
      [1, 'BalancerClosedError'],
    ]);
    expect([rooms.dispatcher.inFlight, rooms.dispatcher.queued, rooms.figures.failed]).toEqual([
      0, 0, 3,
    ]);
  });

  it('an `fn` that starts a run itself: both start, each once, on shards of their own', async () => {
    const rooms = dispatcherRooms({ ids: ['a', 'b'] });
    const { starts, pending, fn } = recorder();
    let inner: ReturnType<typeof track<string>> | undefined;
    const outer = track(
      rooms.dispatcher.run((shard, ctx) => {
        inner = track(rooms.dispatcher.run(fn('inner')));
        return fn('outer')(shard, ctx);
      }),
    );
    expect(starts).toEqual(['inner@b#1', 'outer@a#1']);
    pending[0]!.resolve('i');
    pending[1]!.resolve('o');
    await flush();
    expect([inner?.value, outer.value, rooms.figures.completed]).toEqual(['i', 'o', 2]);
  });

  it('a `drained` listener that starts a run: it starts, and `drained` comes again when it ends', async () => {
    const rooms = dispatcherRooms({ ids: ['a'] });
    const { starts, pending, fn } = recorder();
    let drained = 0;
    rooms.events.on('drained', () => {
      if (++drained === 1) void rooms.dispatcher.run(fn('again'));
    });
    void rooms.dispatcher.run(fn('first'));
    pending[0]!.resolve('1');
    await flush();
    expect([starts, drained, rooms.dispatcher.inFlight]).toEqual([
      ['first@a#1', 'again@a#1'],
      1,
      1,
    ]);
    pending[1]!.resolve('2');
    await flush();
    expect([drained, rooms.dispatcher.inFlight, rooms.figures.completed]).toEqual([2, 0, 2]);
  });
});

describe('Dispatcher: keyed runs and membership', () => {
  it('a keyed run parked at a home that leaves is routed to its new home', async () => {
    const picker = tablePicker({ k: 'a' }, 'strict');
    const { dispatcher, membership, shard } = dispatcherRooms({
      ids: ['a', 'b'],
      picker,
      options: { maxInFlightPerShard: 1 },
    });
    const { starts, pending, fn } = recorder();
    track(dispatcher.run(fn('k1'), { key: 'k' }));
    const parked = track(dispatcher.run(fn('k2'), { key: 'k' }));
    expect([starts, dispatcher.queued]).toEqual([['k1@a#1'], 1]);
    const removal = track(membership.remove('a', true));
    expect(starts).toEqual(['k1@a#1', 'k2@b#1']);
    expect(dispatcher.queued).toBe(0);
    pending[1]!.resolve('k2');
    pending[0]!.resolve('k1');
    await flush();
    expect([parked.value, removal.settled, shard('b').inFlight]).toEqual(['k2', true, 0]);
  });

  it('wake() serves a line whose home came back from ejection', async () => {
    const picker = tablePicker({ k: 'a' }, 'strict');
    const rooms = dispatcherRooms({ ids: ['a', 'b'], picker });
    const a = rooms.shard('a');
    a.health.state = 'ejected';
    rooms.availability.recount();
    const { starts, fn } = recorder();
    track(rooms.dispatcher.run(fn('k1'), { key: 'k' }));
    expect(starts).toEqual([]);
    a.health.state = 'healthy';
    rooms.availability.recount();
    rooms.dispatcher.wake();
    expect(starts).toEqual(['k1@a#1']);
  });

  it('a keyed run waiting for an ejected home fails with ShardUnavailableError at its delivery deadline', async () => {
    const picker = tablePicker({ k: 'a' }, 'strict');
    const rooms = dispatcherRooms({
      ids: ['a', 'b'],
      picker,
      options: { deliveryTimeoutMs: 1_000, health: false },
    });
    rooms.shard('a').health.state = 'ejected';
    rooms.availability.recount();
    const run = track(rooms.dispatcher.run(async () => 'never', { key: 'k' }));
    await tick(rooms.clock, 999);
    expect(run.settled).toBe(false);
    await tick(rooms.clock, 1);
    expect((run.error as Error).name).toBe('ShardUnavailableError');
    expect([rooms.dispatcher.queued, rooms.figures.failed]).toEqual([0, 1]);
  });
});
