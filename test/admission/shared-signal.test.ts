/**
 * One caller signal shared by a running run and runs queued behind it (one slot). The
 * abort frees the running run's slot while the other runs on the same signal are still waiting:
 * are they started — `fn` called, a request sent — although their signal has already aborted?
 */
import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { flush, makeBalancer, shardsOf, track } from '../helpers.js';

describe('an abort of a signal shared by a running run and queued runs', () => {
  it('never calls fn for a queued run whose signal has already aborted', async () => {
    const { balancer } = makeBalancer({
      shards: shardsOf(['a']),
      picker: roundRobin(),
      maxInFlightPerShard: 1,
    });
    const controller = new AbortController();
    const reason = new Error('operator stopped the load');
    // fn records whether the caller's signal had aborted when the balancer called it.
    const calledAfterAbort: number[] = [];
    const outcomes = Array.from({ length: 5 }, (_, i) =>
      track(
        balancer.run(
          () => {
            if (controller.signal.aborted) calledAfterAbort.push(i);
            return new Promise<never>(() => {}); // a call that would only end by its abort
          },
          { signal: controller.signal },
        ),
      ),
    );
    expect(balancer.stats()).toMatchObject({ inFlight: 1, queued: 4 });
    controller.abort(reason);
    await flush();
    expect(outcomes.map((o) => [o.count, o.error])).toEqual(outcomes.map(() => [1, reason]));
    // "a queued run leaves the queue" (RunOptions.signal): none of the 4 queued runs is started.
    expect(calledAfterAbort).toEqual([]);
    expect(balancer.stats().shards[0]!.requests).toBe(1);
    expect(balancer.stats()).toMatchObject({ inFlight: 0, queued: 0, failed: 5 });
  });
});
