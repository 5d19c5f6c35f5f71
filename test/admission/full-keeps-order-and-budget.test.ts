/**
 * Admission while the queue is full (46772ea): what runs admitted then earn, and whether a new
 * run may pass runs that waited longer for the same free slot.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, QueueFullError } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
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

describe("overflow 'reject' full: a keyed run that starts at once and the retry budget", () => {
  it('docs say it earns no retry: its retry is refused by an otherwise empty budget', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: consistentHash({ algorithm: 'rendezvous' }),
      maxInFlightPerShard: 1,
      maxQueued: 1,
      overflow: 'reject',
      retry: {
        attempts: 2,
        backoff: { baseMs: 1, maxMs: 1 },
        budget: { ratio: 1, minPerSecond: 0, ttlMs: 1_000 },
      },
      health: false,
      random: seededRandom(3),
    });
    const keyOn = (id: string): string => keyHomedOn(balancer, id);
    track(balancer.run(() => new Promise(() => {}), { key: keyOn('a') }));
    track(balancer.run(async () => 'a2', { key: keyOn('a') }));
    await flush();
    expect(balancer.stats().queued).toBe(1); // maxQueued runs wait
    await tick(clock, 2_000); // their deposits leave the window
    let attempts = 0;
    track(
      balancer.run(
        () => {
          attempts++;
          return attempts === 1
            ? failAfter(clock, 5, new Error('blip'))
            : resolveAfter(clock, 5, 'ok');
        },
        { key: keyOn('b'), idempotent: true },
      ),
    );
    await tick(clock, 50);
    // docs/retries-and-health.md: "While `maxQueued` runs wait under `overflow: 'reject'`, a run
    // that still starts at once (its key's home has room) earns none either: the budget errs
    // towards fewer retries under overload."
    expect(attempts).toBe(1);
    expect(balancer.stats().budgetExhausted).toBe(1);
    await balancer.close({ drain: false });
  });
});

describe('admission while full keeps arrival order for a free slot', () => {
  it("a new run does not start ahead of an older run queued for the same free shard (overflow 'reject')", async () => {
    const HELD = 65; // more rule-held runs than the pump steps over
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'a', target: 'a', labels: { region: 'eu' } },
        { id: 'b', target: 'b', labels: { region: 'us' } },
      ],
      maxInFlightPerShard: 1,
      maxQueued: HELD + 1,
      overflow: 'reject',
      health: false,
    });
    track(balancer.run(() => new Promise<string>(() => {}), { require: { region: 'eu' } }));
    for (let i = 0; i < HELD; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    const order: string[] = [];
    const older = track(
      balancer.run(async (shard) => {
        order.push('older');
        return shard.id;
      }),
    );
    await flush();
    expect(balancer.stats().queued).toBe(HELD + 1); // full
    const newer = track(
      balancer.run(async (shard) => {
        order.push('newer');
        return shard.id;
      }),
    );
    await flush();
    // docs/backpressure.md: "A run that finds no free slot waits in the balancer's queue, in
    // arrival order": the newer run does not jump ahead of the older one (queued past what the
    // pump scans, it still waits for a held run to start): it is refused, as one that would queue.
    expect(order).toEqual([]);
    expect(newer.error).toBeInstanceOf(QueueFullError);
    expect(older.settled).toBe(false);
    await balancer.close({ drain: false });
  });
});
