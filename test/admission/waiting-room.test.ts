/**
 * The waiting room through its own API: the queue's order (retries first), the counts it keeps
 * itself (`queued` for first attempts, `retrying` apart), when it is full (`overflow`, the hard
 * ceiling), `ready()` and its events woken once per crossing, backoffs that queue a run at the
 * front and pump once, push-back holds released when a shard joins, and strict keyed runs parked
 * in and moved out of their home's line.
 */
import { EventEmitter } from 'eventemitter3';
import { describe, expect, it } from 'vitest';
import { KeyedState, Run } from '../../src/admission/run.js';
import { QUEUE_CEILING_FACTOR, WaitingRoom } from '../../src/admission/waiting-room.js';
import { QueueFullError } from '../../src/base/errors.js';
import type { BalancerEvents } from '../../src/base/events.js';
import { Shard } from '../../src/load/shard.js';
import { ManualClock } from '../../src/testing/index.js';
import { flush, track } from '../helpers.js';

let made = 0;
/** A run as admission makes it; `attempt` > 0 makes it a retry. */
function run(attempt = 0, key?: string): Run<string> & { name: string } {
  const r = new Run<string>(
    async () => undefined,
    key,
    undefined,
    Number.POSITIVE_INFINITY,
    true,
    0,
    undefined,
    0,
    () => {},
    () => {},
  ) as Run<string> & { name: string };
  r.name = `r${++made}`;
  r.attempt = attempt;
  if (key !== undefined) r.keyed = new KeyedState<string>();
  return r;
}

function room(options: { maxQueued?: number; overflow?: 'wait' | 'reject' } = {}) {
  const clock = new ManualClock();
  const events = new EventEmitter<BalancerEvents>();
  const emitted: string[] = [];
  events.on('saturated', (e) => emitted.push(`saturated ${e.queued}/${e.maxQueued}`));
  events.on('ready', () => emitted.push('ready'));
  const pumps = { count: 0 };
  // The dispatcher's flush: what the room leaves for after the step.
  const after: (() => void)[] = [];
  const waiting = new WaitingRoom<string>(
    { maxQueued: options.maxQueued ?? 2, overflow: options.overflow ?? 'wait' },
    events,
    {
      clock,
      expired: () => {},
      serve: () => {},
      probeEarly: () => {},
      pump: () => pumps.count++,
      later: (call) => after.push(call),
    },
  );
  const stepDone = () => {
    for (const call of after.splice(0)) call();
  };
  const shard = (id: string) => new Shard<string>({ id, target: id }, 0, 1, clock, {});
  return { clock, waiting, emitted, pumps, shard, stepDone };
}

function queueNames(waiting: WaitingRoom<string>): string[] {
  const out: string[] = [];
  for (let r = waiting.queue.head; r !== undefined; r = r.next as Run<string> | undefined) {
    out.push((r as Run<string> & { name: string }).name);
  }
  return out;
}
const names = (runs: Run<string>[]) => runs.map((r) => (r as Run<string> & { name: string }).name);

describe('WaitingRoom: the queue and its counts', () => {
  it('queues first come, first served; a retry or a moved run goes first', () => {
    const { waiting } = room({ maxQueued: 10 });
    const [a, b, c] = [run(), run(), run(1)];
    waiting.enqueue(a, false, 5);
    waiting.enqueue(b, false, 6);
    waiting.enqueue(c, true, 7);
    expect(queueNames(waiting)).toEqual([c.name, a.name, b.name]);
    expect([a.state, a.queuedAtMs, c.queuedAtMs]).toEqual(['queued', 5, 7]);
  });

  it('counts first attempts as queued and retries as retrying, each run once', () => {
    const { waiting } = room({ maxQueued: 10 });
    const first = run();
    const retry = run(2);
    waiting.enqueue(first, false, 0);
    waiting.enqueue(retry, true, 0);
    waiting.count(first, 1); // counted already: no second count
    expect([waiting.queued, waiting.retrying]).toEqual([1, 1]);
    waiting.remove(first);
    waiting.count(first, -1); // uncounted already: no second uncount
    expect([waiting.queued, waiting.retrying, waiting.queue.size]).toEqual([0, 1, 1]);
  });

  it('with overflow reject, is full at maxQueued; with wait, only at the hard ceiling', () => {
    const reject = room({ maxQueued: 2, overflow: 'reject' }).waiting;
    reject.enqueue(run(), false, 0);
    expect(reject.full).toBe(false);
    reject.enqueue(run(), false, 0);
    expect(reject.full).toBe(true);
    expect(reject.fullError()).toBeInstanceOf(QueueFullError);
    expect(reject.fullError().message).toContain('maxQueued 2');

    const wait = room({ maxQueued: 2 }).waiting;
    for (let i = 0; i < 2 * QUEUE_CEILING_FACTOR - 1; i++) wait.enqueue(run(), false, 0);
    expect(wait.full).toBe(false);
    wait.enqueue(run(), false, 0);
    expect(wait.full).toBe(true);
    expect(wait.fullError().message).toContain('hard ceiling');
  });

  it('retries waiting do not make the room full: only first attempts count against maxQueued', () => {
    const { waiting } = room({ maxQueued: 1, overflow: 'reject' });
    waiting.enqueue(run(1), true, 0);
    waiting.enqueue(run(3), true, 0);
    expect(waiting.full).toBe(false);
  });
});

describe('WaitingRoom: ready() and its events', () => {
  it('ready() resolves at once below maxQueued, and waits at it until the queue shrinks', async () => {
    const { waiting } = room({ maxQueued: 2 });
    await waiting.ready(true);
    const a = run();
    waiting.enqueue(a, false, 0);
    waiting.enqueue(run(), false, 0);
    const ready = track(waiting.ready(true));
    await flush();
    expect(ready.settled).toBe(false);
    waiting.shrank(); // still at maxQueued: nothing wakes
    await flush();
    expect(ready.settled).toBe(false);
    waiting.remove(a);
    waiting.shrank();
    await flush();
    expect(ready.settled).toBe(true);
  });

  it('ready() of a closed room resolves at once; a closing shrink wakes every waiter', async () => {
    const { waiting } = room({ maxQueued: 1 });
    waiting.enqueue(run(), false, 0);
    await waiting.ready(false);
    const ready = track(waiting.ready(true));
    waiting.shrank(true);
    await flush();
    expect(ready.settled).toBe(true);
  });

  it('emits saturated once per crossing of maxQueued, and ready once after it falls below', () => {
    const { waiting, emitted, stepDone } = room({ maxQueued: 2 });
    const runs = [run(), run(), run()];
    for (const r of runs) waiting.enqueue(r, false, 0);
    stepDone();
    expect(emitted).toEqual(['saturated 2/2']);
    for (const r of runs) {
      waiting.remove(r);
      waiting.shrank();
    }
    stepDone();
    expect(emitted).toEqual(['saturated 2/2', 'ready']);
    waiting.shrank();
    waiting.enqueue(run(), false, 0);
    waiting.enqueue(run(), false, 0);
    stepDone();
    expect(emitted).toEqual(['saturated 2/2', 'ready', 'saturated 2/2']);
  });

  it('its listeners run once the step is done, not inside it (they may act on the balancer)', () => {
    const { waiting, emitted, stepDone } = room({ maxQueued: 1 });
    const a = run();
    waiting.enqueue(a, false, 0);
    expect(emitted).toEqual([]);
    stepDone();
    expect(emitted).toEqual(['saturated 1/1']);
    waiting.remove(a);
    waiting.shrank();
    expect(emitted).toEqual(['saturated 1/1']);
    stepDone();
    expect(emitted).toEqual(['saturated 1/1', 'ready']);
  });
});

describe('WaitingRoom: backoff', () => {
  it('holds a failed run as retrying for its backoff, then queues it first and pumps once', () => {
    const { clock, waiting, pumps } = room({ maxQueued: 10 });
    const waiting1 = run();
    waiting.enqueue(waiting1, false, 0);
    const failed = run(1);
    waiting.backOff(failed, 50, 0, false);
    expect([failed.state, waiting.retrying, waiting.queue.size]).toEqual(['backoff', 1, 1]);
    clock.advance(49);
    expect(pumps.count).toBe(0);
    clock.advance(1);
    expect(queueNames(waiting)).toEqual([failed.name, waiting1.name]);
    expect([failed.state, failed.queuedAtMs, waiting.retrying, pumps.count]).toEqual([
      'queued',
      50,
      1,
      1,
    ]);
  });

  it('with no delay, queues the run first at once and does not pump (its caller does)', () => {
    const { waiting, pumps } = room();
    const failed = run(1);
    waiting.backOff(failed, 0, 0, false);
    expect([queueNames(waiting), pumps.count]).toEqual([[failed.name], 0]);
  });

  it('a run settled during its backoff is not queued when the backoff ends', () => {
    const { clock, waiting, pumps } = room();
    const failed = run(1);
    waiting.backOff(failed, 50, 0, false);
    failed.state = 'settled';
    clock.advance(50);
    expect([waiting.queue.size, pumps.count]).toEqual([0, 0]);
  });

  it('release() queues at once the runs held only by push-back that a new shard frees, and no timer queues them again', () => {
    const { clock, waiting, pumps } = room();
    const held = run(1);
    const backingOff = run(1);
    const stillHeld = run(1);
    waiting.backOff(held, 500, 0, true);
    waiting.backOff(backingOff, 500, 0, false);
    waiting.backOff(stillHeld, 500, 0, true);
    clock.advance(10);
    waiting.release(clock.now(), (r) => r !== stillHeld);
    expect(queueNames(waiting)).toEqual([held.name]);
    expect(held.queuedAtMs).toBe(10);
    clock.advance(490);
    // The two left held queue when their timers end; the released one is not queued twice.
    expect(queueNames(waiting)).toEqual([stillHeld.name, backingOff.name, held.name]);
    expect(waiting.queue.size).toBe(3);
    expect(pumps.count).toBe(2);
  });
});

describe('WaitingRoom: home lines', () => {
  it('park moves a queued keyed run into its home’s line, counted once', () => {
    const { waiting, shard } = room();
    const home = shard('a');
    const keyed = run(0, 'k');
    waiting.enqueue(keyed, false, 0);
    waiting.park(keyed, home);
    expect([waiting.queue.size, waiting.lines.size, waiting.queued]).toEqual([0, 1, 1]);
    expect(waiting.lines.head(home)).toBe(keyed);
    waiting.remove(keyed);
    expect([waiting.lines.size, waiting.lines.head(home), waiting.queued]).toEqual([
      0,
      undefined,
      0,
    ]);
  });

  it('requeueLines moves every parked run to the queue’s front, each line in order', () => {
    const { waiting, shard } = room({ maxQueued: 10 });
    const [a, b] = [shard('a'), shard('b')];
    const queued = run();
    waiting.enqueue(queued, false, 0);
    const [a1, a2, b1] = [run(0, 'x'), run(0, 'y'), run(0, 'z')];
    waiting.park(a1, a);
    waiting.park(a2, a);
    waiting.park(b1, b);
    expect(names(waiting.everyone())).toEqual([queued.name, a1.name, a2.name, b1.name]);
    waiting.requeueLines(20);
    expect(queueNames(waiting)).toEqual([a1.name, a2.name, b1.name, queued.name]);
    expect([waiting.lines.size, waiting.queued, a1.queuedAtMs]).toEqual([0, 4, 20]);
  });
});
