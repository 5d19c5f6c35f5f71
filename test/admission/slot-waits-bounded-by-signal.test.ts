import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../src/index.js';
import { flush, makeBalancer, tick, track } from '../helpers.js';

// docs/reference.md `timeoutMs`: "It also bounds the waits for a shard that cannot be used … A wait for a free
// slot (in the queue, or in a capped home's line) is backpressure, not a fault, and has no
// deadline: the caller's `signal` bounds the whole run" (it said "every wait of the run").
describe('timeoutMs does not bound a wait for a free slot; the caller signal does', () => {
  it('a run waiting in the queue for a slot', async () => {
    const { clock, balancer } = makeBalancer({ maxInFlightPerShard: 1, timeoutMs: 100 }, ['a']);
    // The slot is held by a run whose own attempt may take 10 s.
    const first = track(balancer.run(() => new Promise(() => {}), { timeoutMs: 10_000 }));
    const caller = new AbortController();
    const out = track(balancer.run(async () => 1, { signal: caller.signal }));
    await tick(clock, 1_000);
    expect(first.settled).toBe(false);
    expect(out.settled).toBe(false);
    expect(balancer.stats().queued).toBe(1);
    caller.abort(new Error('gave up'));
    await flush();
    expect(out.error).toEqual(new Error('gave up'));
    expect(balancer.stats().queued).toBe(0);
  });

  it('a strict keyed run waiting for a slot on its capped home', async () => {
    const { clock, balancer } = makeBalancer(
      { maxInFlightPerShard: 1, timeoutMs: 100, picker: consistentHash() },
      ['a', 'b'],
    );
    const first = track(balancer.run(() => new Promise(() => {}), { key: 'k', timeoutMs: 10_000 }));
    const out = track(balancer.run(async () => 1, { key: 'k' }));
    await flush();
    await tick(clock, 1_000);
    expect(first.settled).toBe(false);
    expect(out.settled).toBe(false);
  });
});
