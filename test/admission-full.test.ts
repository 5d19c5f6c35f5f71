/**
 * Admission attacks: runs refused with QueueFullError although they would not queue at all, and
 * runs admitted without funding the retry budget.
 */
import { describe, expect, it } from 'vitest';
import { Balancer, consistentHash } from '../src/index.js';
import { ManualClock, seededRandom } from '../src/testing/index.js';
import { failAfter, flush, resolveAfter, tick, track } from './helpers.js';

function labelled(clock: ManualClock, extra: Record<string, unknown>) {
  return new Balancer<string>({
    shards: [
      { id: 'a', target: 'a', labels: { region: 'eu' } },
      { id: 'b', target: 'b', labels: { region: 'us' } },
    ],
    maxInFlightPerShard: 1,
    clock,
    random: seededRandom(1),
    ...extra,
  });
}

describe('admission: a run that would start at once never meets QueueFullError', () => {
  it("overflow 'reject': a run for an idle shard is refused because runs bound to another shard fill the queue", async () => {
    const clock = new ManualClock();
    const balancer = labelled(clock, { maxQueued: 2, overflow: 'reject' });
    // one eu run on 'a', two more waiting for 'a' (queued = maxQueued); 'b' is idle
    for (let i = 0; i < 3; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    expect(balancer.stats().queued).toBe(2);
    expect(balancer.stats().shards.find((s) => s.id === 'b')!.inFlight).toBe(0);

    let called = false;
    const free = track(
      balancer.run(async (shard) => {
        called = true;
        return shard.id;
      }),
    );
    await flush();
    // docs/backpressure.md: "a run that would queue past maxQueued rejects at once" — this one
    // would not queue: with overflow 'wait' the same run starts on 'b' at once (next test).
    expect((free.error as Error | undefined)?.name).toBeUndefined();
    expect(called).toBe(true);
    expect(free.value).toBe('b');
    await tick(clock, 100);
    await balancer.close();
  });

  it("control: with overflow 'wait' the same run starts on the idle shard at once", async () => {
    const clock = new ManualClock();
    const balancer = labelled(clock, { maxQueued: 2, overflow: 'wait' });
    for (let i = 0; i < 3; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    const free = track(balancer.run(async (shard) => shard.id));
    await flush();
    expect(free.value).toBe('b');
    await tick(clock, 100);
    await balancer.close();
  });

  it('the hard ceiling (10 × maxQueued) refuses a run that would start at once on an idle shard', async () => {
    const clock = new ManualClock();
    const balancer = labelled(clock, { maxQueued: 1 }); // overflow 'wait', ceiling 10
    for (let i = 0; i < 11; i++)
      track(balancer.run(() => resolveAfter(clock, 10, 'eu'), { require: { region: 'eu' } }));
    await flush();
    expect(balancer.stats().queued).toBe(10);
    const free = track(balancer.run(async (shard) => shard.id));
    await flush();
    // README `maxQueued`: "at most 10 × maxQueued runs queue: past that run() rejects with
    // QueueFullError" — this run does not queue; shard 'b' is idle.
    expect((free.error as Error | undefined)?.message).toBeUndefined();
    expect(free.value).toBe('b');
    await tick(clock, 1_000);
    await balancer.close();
  });
});

describe('admission: every admitted run funds the retry budget', () => {
  it("overflow 'reject' with a full home line: a keyed run that starts at once is not deposited, so its retry is refused", async () => {
    const clock = new ManualClock();
    const balancer = new Balancer<string>({
      shards: [
        { id: 'a', target: 'a' },
        { id: 'b', target: 'b' },
      ],
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
      clock,
      random: seededRandom(3),
    });
    const keyOn = (id: string): string => {
      for (let i = 0; i < 1_000; i++) if (balancer.homeOf(`k${i}`) === id) return `k${i}`;
      throw new Error(`no key for ${id}`);
    };
    const ka = keyOn('a');
    const kb = keyOn('b');
    // 'a' busy for good, one more run waits in a's line: queued = maxQueued (the queue is empty)
    track(balancer.run(() => new Promise(() => {}), { key: ka }));
    track(balancer.run(async () => 'a2', { key: ka }));
    await flush();
    expect(balancer.stats().queued).toBe(1);
    // both of those deposits leave the budget's window
    await tick(clock, 2_000);

    // a run keyed to idle 'b' is admitted and starts at once; its first attempt fails
    let attempts = 0;
    const b = track(
      balancer.run(
        () => {
          attempts++;
          return attempts === 1
            ? failAfter(clock, 5, new Error('blip'))
            : resolveAfter(clock, 5, 'ok');
        },
        { key: kb, idempotent: true },
      ),
    );
    await tick(clock, 50);
    // README `retry`: "The budget allows a retry while retries started in the last ttlMs + 1 ≤
    // ratio × runs started in the last ttlMs + minPerSecond × ttlMs / 1000": 0 + 1 ≤ 1 × 1 + 0.
    expect(balancer.stats().budgetExhausted).toBe(0);
    expect(attempts).toBe(2);
    expect(b.value).toBe('ok');
    await balancer.close({ drain: false });
  });

  it('control: the same run, admitted while the line is not full, is retried', async () => {
    const clock = new ManualClock();
    const balancer = new Balancer<string>({
      shards: [
        { id: 'a', target: 'a' },
        { id: 'b', target: 'b' },
      ],
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
      clock,
      random: seededRandom(3),
    });
    const keyOn = (id: string): string => {
      for (let i = 0; i < 1_000; i++) if (balancer.homeOf(`k${i}`) === id) return `k${i}`;
      throw new Error(`no key for ${id}`);
    };
    track(balancer.run(() => new Promise(() => {}), { key: keyOn('a') }));
    await tick(clock, 2_000);
    let attempts = 0;
    const b = track(
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
    expect(attempts).toBe(2);
    expect(b.value).toBe('ok');
    await balancer.close({ drain: false });
  });
});
