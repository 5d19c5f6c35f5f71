/**
 * A run's life through its own transitions (`admission/run.ts`), the only writes of its state:
 * an attempt's context is its identity (a late answer finds another, or none), an attempt that
 * ends takes its timer with it, and a run backing off or settled holds no shard.
 */
import { EventEmitter } from 'eventemitter3';
import { describe, expect, it } from 'vitest';
import type { BalancerEvents } from '../../src/base/events.js';
import { Shard } from '../../src/load/shard.js';
import { TransitLedger } from '../../src/load/transit.js';
import { ManualClock } from '../../src/testing/index.js';
import { newRun } from '../routing/rooms.js';

function shard(id = 'a'): Shard<string> {
  return new Shard<string>({ id, target: id }, 0, 4, new ManualClock(), {});
}

const ledger = new TransitLedger(undefined, new EventEmitter<BalancerEvents>());

describe('Run transitions', () => {
  it('an attempt starts with a context of its own, and ending it leaves the run no attempt', () => {
    const run = newRun();
    const a = shard();
    const first = run.start(a, true, 40, ledger);
    expect(run).toMatchObject({ state: 'running', attempt: 1, shard: a, probe: true, ctx: first });
    expect([first.attempt, run.attemptStartMs]).toEqual([1, 40]);
    expect(run.end()).toBe(first);
    // Still holding its slot until it settles or backs off, but no attempt is live.
    expect([run.state, run.ctx]).toEqual(['running', undefined]);
    const second = run.start(a, false, 50, ledger);
    expect(second).not.toBe(first);
    expect([second.attempt, run.ctx === first]).toEqual([2, false]); // the first one's answer: stale
  });

  it('ending an attempt cancels its timer once', () => {
    const run = newRun();
    run.start(shard(), false, 0, ledger);
    let cancelled = 0;
    run.cancelTimer = () => cancelled++;
    run.end();
    expect([cancelled, run.cancelTimer]).toEqual([1, undefined]);
  });

  it('a run backing off or settled holds no shard; settling cancels its timer', () => {
    const run = newRun();
    run.start(shard(), false, 0, ledger);
    run.end();
    run.backOff();
    expect(run).toMatchObject({ state: 'backoff', shard: undefined });
    run.wait(70);
    expect(run).toMatchObject({ state: 'queued', queuedAtMs: 70 });
    run.wait(); // a home's line: the queue time stays
    expect(run.queuedAtMs).toBe(70);
    let cancelled = 0;
    run.cancelTimer = () => cancelled++;
    run.start(shard('b'), false, 80, ledger);
    run.settle();
    expect(run).toMatchObject({ state: 'settled', shard: undefined, cancelTimer: undefined });
    expect(cancelled).toBe(1);
  });
});
