/**
 * Attacks on panic mode and strict affinity's home lines.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../src/index.js';
import {
  failAfter,
  keyHomedOn,
  makeBalancer,
  recorded,
  resolveAfter,
  shardsOf,
  tick,
  track,
} from '../helpers.js';

describe('panic mode and runs waiting for an ejected home', () => {
  it('when panic starts, a keyed run waiting for its ejected home starts there (ejection is ignored)', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      picker: consistentHash({ algorithm: 'maglev' }),
      retry: false,
      timeoutMs: 5_000,
      health: {
        consecutiveFailures: 1,
        baseEjectionMs: 60_000,
        maxEjectedPercent: 100,
        panicThreshold: 50,
      },
    });
    const panics = recorded(balancer, 'panic');
    const fail = (home: string) =>
      track(
        balancer.run(() => failAfter(clock, 1, new Error('down')), {
          key: keyHomedOn(balancer, home),
        }),
      );
    fail('a');
    await tick(clock, 1);
    expect(balancer.stats().shards.find((s) => s.id === 'a')!.ejected).toBe(true);
    // A run for a key living on the ejected shard waits for it.
    const waiting = track(
      balancer.run((shard) => resolveAfter(clock, 1, shard.id), { key: keyHomedOn(balancer, 'a') }),
    );
    await tick(clock, 10);
    expect(waiting.settled).toBe(false);
    // Two more shards fail: 1 of 4 healthy (25 % < 50 %) — panic, ejection is ignored.
    fail('b');
    fail('c');
    await tick(clock, 1);
    expect(balancer.stats().panic).toBe(true);
    expect(panics).toEqual([{ active: true, healthy: 1, total: 4 }]);
    // The run that was already waiting for 'a' now starts there, well before its 5 s deadline
    // (a new run for the same key would start on 'a' at once: panic ignores its ejection).
    await tick(clock, 5_000);
    expect({
      settled: waiting.settled,
      value: waiting.value,
      error: String(waiting.error),
    }).toEqual({
      settled: true,
      value: 'a',
      error: 'undefined',
    });
    await balancer.close({ drain: false });
  });
});
