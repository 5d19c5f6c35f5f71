/**
 * docs/adaptive-limits.md: "Its drops are: timeouts — the attempt's `timeoutMs` (the balancer's
 * or the run's) ran out …; push-back …; shard faults — errors the classifier calls retryable."
 * Timeouts are a drop in their own right, not only when the retry classifier happens to call a
 * TimeoutError retryable.
 */
import { describe, expect, it } from 'vitest';
import { aimd, TimeoutError } from '../../src/index.js';
import { flush, makeBalancer, recorded, shardsOf, tick } from '../helpers.js';

describe('a timed-out attempt is a drop whatever retry.retryable says', () => {
  it('aimd backs off when every call times out, with a classifier that retries only resets', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a']),
      maxInFlightPerShard: aimd({ initial: 10, max: 50 }),
      timeoutMs: 100,
      // A common classifier: retry only what surely never reached the shard.
      retry: { attempts: 1, retryable: (err) => (err as { code?: string }).code === 'ECONNRESET' },
    });
    const moves = recorded(balancer, 'limit');
    // Ten calls that never answer: each attempt runs out its 100 ms timeoutMs.
    const runs = Array.from({ length: 10 }, () =>
      balancer.run(() => new Promise<never>(() => {})).catch((e: unknown) => e),
    );
    await flush();
    await tick(clock, 100);
    const errors = await Promise.all(runs);
    expect(errors.every((e) => e instanceof TimeoutError)).toBe(true);
    // Ten drops at × 0.9: 10 × 0.9^10 ≈ 3.5 → 3. The limit must not grow on timeouts.
    expect(moves.filter((m) => m.limit > m.previous)).toEqual([]);
    expect(balancer.stats().shards[0]!.limit).toBe(3);
    await balancer.close();
  });
});
