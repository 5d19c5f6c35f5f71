/**
 * A close from a listener while the queue pump runs: runs it settled are never started after it.
 */
import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import type { ManualClock } from '../../src/testing/index.js';
import { flush, makeBalancer, shardsOf } from '../helpers.js';

async function runOut(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 50; i++) {
    await flush();
    const next = clock.nextTimerAt();
    if (next === undefined) break;
    clock.advanceTo(next);
  }
  await flush();
}

function setup() {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a']),
    picker: roundRobin(),
    maxInFlightPerShard: 1,
  });
  const calls: string[] = [];
  const settled: Record<string, number> = {};
  const run = (name: string, signal?: AbortSignal) => {
    settled[name] = 0;
    balancer
      .run(
        () => {
          calls.push(name);
          return new Promise((res) => clock.setTimer(() => res(name), 10));
        },
        { key: name, signal },
      )
      .then(
        () => settled[name]!++,
        () => settled[name]!++,
      );
  };
  return { clock, balancer, calls, settled, run };
}

describe('a listener acting on the balancer while the queue pump runs', () => {
  it('close({ drain: false }) from a `pick` listener: no queued run is started after it, and stats add up', async () => {
    const { clock, balancer, calls, settled, run } = setup();
    let armed = true;
    balancer.on('pick', (e) => {
      if (armed && e.key === 'second') {
        armed = false;
        void balancer.close({ drain: false });
      }
    });
    run('first'); // runs 0–10 ms
    run('second'); // queued; picked at 10 ms, when its pick listener closes the balancer
    run('third'); // queued behind it: settled by the close
    await runOut(clock);
    expect(settled).toEqual({ first: 1, second: 1, third: 1 });
    const s = balancer.stats();
    // `third` was rejected with BalancerClosedError by the close: fn must never be called for it,
    // and each of the 3 calls is counted once
    expect({ calls, completed: s.completed, failed: s.failed, refused: s.refused }).toEqual({
      calls: ['first'],
      completed: 1,
      failed: 2,
      refused: 0,
    });
  });
});
