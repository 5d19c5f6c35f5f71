/**
 * A strict keyed run waits in its home's line while the home pushes back; the caller
 * aborts it, and the balancer is closed. Nothing may be left: no run, no count, no timer.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, PushBackError } from '../../src/index.js';
import { flush, makeBalancer, shardsOf, track } from '../helpers.js';

describe('abort while waiting in a pushed-back home line', () => {
  it('after the abort and close(), no timer of the balancer is left pending', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker: consistentHash(),
      retry: false,
    });
    // The key's home pushes back for an hour (a PushBackError may ask for up to 365 days).
    const first = track(
      balancer.run(
        async () => {
          throw new PushBackError(3_600_000);
        },
        { key: 'k' },
      ),
    );
    await flush();
    expect(first.error).toBeInstanceOf(PushBackError);
    const controller = new AbortController();
    let called = false;
    const waiting = track(
      balancer.run(
        async () => {
          called = true;
        },
        { key: 'k', signal: controller.signal },
      ),
    );
    await flush();
    expect(waiting.settled).toBe(false);
    expect(balancer.stats().queued).toBe(1);
    controller.abort('user cancelled'); // a non-Error reason
    await flush();
    expect({ count: waiting.count, error: waiting.error, called }).toEqual({
      count: 1,
      error: 'user cancelled',
      called: false,
    });
    await balancer.close();
    expect(balancer.stats()).toMatchObject({ queued: 0, retrying: 0, inFlight: 0, failed: 2 });
    // Nothing waits any more: a timer still armed for the push-back's end holds a Node process
    // open (the system clock's timers are not background) for up to the whole push-back.
    expect(clock.pendingTimers).toBe(0);
  });
});
