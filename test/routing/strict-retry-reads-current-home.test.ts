/**
 * A strict keyed retry waits for (or refuses on) its home's push-back — but the home it reads is
 * the one cached when the attempt started, not the key's home now.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, PushBackError } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import {
  failAfter,
  flush,
  keyHomedOn,
  makeBalancer,
  resolveAfter,
  shardsOf,
  tick,
  track,
} from '../helpers.js';

function make(clock: ManualClock) {
  return makeBalancer({
    clock,
    shards: shardsOf(['a', 'b']),
    picker: consistentHash({ algorithm: 'rendezvous' }),
    timeoutMs: 1_000,
    health: false,
    retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
  }).balancer;
}

/** A strict keyed run of `key` that 'a' pushes back for 10 s, and any other shard serves. */
function pushedBackOnA(balancer: ReturnType<typeof make>, clock: ManualClock, key: string) {
  const seen: string[] = [];
  const out = track(
    balancer.run(
      (shard) => {
        seen.push(shard.id);
        return shard.id === 'a'
          ? failAfter(clock, 10, new PushBackError(10_000))
          : resolveAfter(clock, 5, shard.id);
      },
      { key, idempotent: true },
    ),
  );
  return { seen, out };
}

describe('strict keyed retry after push-back reads the key’s current home', () => {
  it('home removed (drain) while its attempt runs: the retry goes to the key’s new home', async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    const key = keyHomedOn(balancer, 'a');
    const { seen, out } = pushedBackOnA(balancer, clock, key);
    await flush();
    expect(seen).toEqual(['a']);
    const removed = balancer.removeShard('a'); // drain: the attempt on 'a' goes on
    await flush();
    expect(balancer.homeOf(key)).toBe('b');
    await tick(clock, 100);
    // docs/retries-and-health.md: "when the home pushes back for longer than the run's timeoutMs
    // it rejects with ShardUnavailableError at once" — the key's home is 'b' now, idle.
    expect((out.error as Error | undefined)?.message).toBeUndefined();
    expect(out.value).toBe('b');
    expect(seen).toEqual(['a', 'b']);
    await removed;
    await balancer.close();
  });

  it('a shard added while the attempt runs becomes the home: the retry goes there', async () => {
    const clock = new ManualClock();
    const balancer = make(clock);
    balancer.addShard({ id: 'c', target: 'c' });
    // a key whose home is 'c' with c, and 'a' without it
    let key = '';
    const probe = make(new ManualClock());
    for (let i = 0; i < 5_000 && key === ''; i++) {
      const k = `k${i}`;
      if (balancer.homeOf(k) === 'c' && probe.homeOf(k) === 'a') key = k;
    }
    await probe.close();
    expect(key).not.toBe('');
    await balancer.removeShard('c');
    expect(balancer.homeOf(key)).toBe('a');
    const { out } = pushedBackOnA(balancer, clock, key);
    await flush();
    balancer.addShard({ id: 'c', target: 'c' });
    expect(balancer.homeOf(key)).toBe('c');
    await tick(clock, 100);
    expect((out.error as Error | undefined)?.message).toBeUndefined();
    expect(out.value).toBe('c');
    await balancer.close();
  });
});
