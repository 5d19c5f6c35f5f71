/**
 * The test of the custom picker beside it, as a team would test its own: conformance invariants,
 * exact picks on shards whose load the test sets, picks on a manual clock with a seeded random
 * source, and a simulation against round robin with one slow shard. It imports only `shardwise`,
 * `shardwise/testing` and vitest: copy this folder into your project and `npx vitest` runs it.
 */
import { Balancer, PushBackError, roundRobin, type ShardState } from 'shardwise';
import {
  exponential,
  ManualClock,
  pickerConformance,
  seededRandom,
  shardViews,
  simulate,
} from 'shardwise/testing';
import { describe, expect, it } from 'vitest';
import { leastLatency, main } from './least-latency.js';

/** Advances virtual time by `ms`, letting the work each timer starts run before the next fires. */
async function tick(clock: ManualClock, ms: number): Promise<void> {
  const flush = () => new Promise((resolve) => setImmediate(resolve));
  const target = clock.now() + ms;
  await flush();
  for (let next = clock.nextTimerAt(); next !== undefined && next <= target; ) {
    clock.advanceTo(next);
    await flush();
    next = clock.nextTimerAt();
  }
  clock.advanceTo(target);
  await flush();
}

/** Resolves after `ms` of virtual time: a shard that takes `ms` to answer. */
function answerAfter(clock: ManualClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, ms));
}

/** A random source that replays `values`, to make a picker's two draws whatever the test needs. */
function scripted(values: readonly number[]): () => number {
  let i = 0;
  return () => {
    if (i >= values.length) throw new Error(`scripted random ran out after ${values.length} draws`);
    return values[i++]!;
  };
}

function countBy(ids: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of ids) counts[id] = (counts[id] ?? 0) + 1;
  return counts;
}

describe('leastLatency (examples/custom-picker)', () => {
  it('keeps every picker invariant', () => {
    const report = pickerConformance(leastLatency, { seed: 7, rounds: 500 });
    expect(report.picker).toBe('least-latency');
    expect(report.checks).toContain('respects exclusion');
    expect(report.checks).toContain('deterministic under a seed');
    expect(report.checks).toContain('does not mutate shards');
  });

  it('picks the lower latency of its two draws, ties to fewer in flight (exact)', () => {
    const picker = leastLatency();
    const [fast, slow] = shardViews([
      { id: 'fast', rttMs: 10, inFlight: 9 },
      { id: 'slow', rttMs: 50, inFlight: 0 },
    ]) as [ShardState, ShardState];
    const request = (values: number[]) => ({
      attempt: 1,
      totalInFlight: 0,
      random: scripted(values),
    });
    // Draws 0 then 0.9 → shards 0 and 1; draws 0.9 then 0 → shards 1 and 0: either order.
    expect(picker.pick([fast, slow], request([0, 0.9]))).toBe(fast);
    expect(picker.pick([fast, slow], request([0.9, 0]))).toBe(fast);
    const [busy, idle] = shardViews([
      { id: 'busy', rttMs: 20, inFlight: 5 },
      { id: 'idle', rttMs: 20, inFlight: 1 },
    ]) as [ShardState, ShardState];
    expect(picker.pick([busy, idle], request([0, 0.9]))).toBe(idle);
    expect(picker.pick([busy, idle], request([0.9, 0]))).toBe(idle);
    // Pushing back (load carries a penalty over inFlight): the slower shard wins.
    const [pushing] = shardViews([{ id: 'pushing', rttMs: 1, load: 1e9 }]) as [ShardState];
    expect(picker.pick([pushing, slow], request([0, 0.9]))).toBe(slow);
    expect(picker.pick([fast], request([]))).toBe(fast);
    expect(picker.pick([], request([]))).toBeUndefined();
  });

  it('stops sending to a shard once it has measured slow (virtual time, seeded)', async () => {
    const clock = new ManualClock();
    const balancer = new Balancer<number>({
      // target: each shard's service time, in virtual ms
      shards: [
        { id: 'fast-1', target: 5 },
        { id: 'slow', target: 80 },
        { id: 'fast-2', target: 5 },
      ],
      picker: leastLatency(),
      clock,
      random: seededRandom(42),
    });
    const picks: { id: string; at: number }[] = [];
    balancer.on('pick', ({ shard }) => picks.push({ id: shard.id, at: clock.now() }));
    const runs: Promise<unknown>[] = [];
    // One run per virtual ms for 300 ms.
    for (let t = 0; t < 300; t++) {
      runs.push(balancer.run((shard) => answerAfter(clock, shard.target)));
      await tick(clock, 1);
    }
    await tick(clock, 100);
    await Promise.all(runs);
    expect(picks).toHaveLength(300);
    // Until a fast shard has its first sample (5 ms), all three cost the default 30 ms; from
    // then on the slow shard (30 ms, then 80 ms measured) loses every pair it is drawn in.
    expect(picks.filter((p) => p.id === 'slow' && p.at >= 5)).toEqual([]);
    expect(balancer.stats().shards.map((s) => s.requests)).toEqual([
      countBy(picks.map((p) => p.id))['fast-1'],
      countBy(picks.map((p) => p.id)).slow ?? 0,
      countBy(picks.map((p) => p.id))['fast-2'],
    ]);
    await balancer.close();
  });

  it('passes over a shard that pushes back, until the advised time is over', async () => {
    const clock = new ManualClock();
    const balancer = new Balancer<string>({
      shards: [
        { id: 'a', target: 'a' },
        { id: 'b', target: 'b' },
      ],
      picker: leastLatency(),
      maxInFlightPerShard: 1, // two concurrent runs: one on each shard
      clock,
      random: seededRandom(5),
      retry: false,
    });
    // `a` answers with a push-back for 10 s (a 429 with Retry-After: 10); `b` takes 40 ms.
    const call = (shard: { id: string }) =>
      shard.id === 'a' ? Promise.reject(new PushBackError(10_000)) : answerAfter(clock, 40);
    const first = [balancer.run(call), balancer.run(call)].map((p) => p.catch((e: unknown) => e));
    await tick(clock, 40);
    const outcomes = await Promise.all(first);
    expect(outcomes.filter((o) => o instanceof PushBackError)).toHaveLength(1);
    // `b` measured 40 ms, `a` still has the 30 ms default: latency alone would pick `a`.
    const picks: string[] = [];
    balancer.on('pick', ({ shard }) => picks.push(shard.id));
    for (let i = 0; i < 10; i++) {
      const run = balancer.run(call);
      await tick(clock, 40);
      await run;
    }
    expect(countBy(picks)).toEqual({ b: 10 });
    const a = balancer.shards.find((s) => s.id === 'a')!;
    expect(a.load).toBeGreaterThan(a.inFlight); // the push-back penalty
    await tick(clock, 10_000); // the advised time is over: `a` competes on latency again
    expect(a.load).toBe(a.inFlight);
    await balancer.close();
  });

  it('beats round robin at p99 with one slow shard (simulated, seeded)', async () => {
    const shards = Array.from({ length: 6 }, (_, i) => ({
      id: `shard-${i}`,
      latency: exponential(i === 0 ? 100 : 10),
      capacity: 4,
    }));
    const options = { shards, arrivals: { rate: 1_000 }, requests: 10_000, seed: 3 };
    const mine = await simulate({ ...options, picker: leastLatency });
    const rr = await simulate({ ...options, picker: roundRobin });
    expect(mine.failures).toBe(0);
    expect(mine.latency.p99).toBeLessThan(rr.latency.p99 / 4);
    expect(mine.perShard[0]!.requests).toBeLessThan(rr.perShard[0]!.requests / 5);
    // Deterministic: the same seed gives the same result.
    const again = await simulate({ ...options, picker: leastLatency });
    expect(again.latency).toEqual(mine.latency);
  });

  it("the example's main() reports both pickers", async () => {
    const { leastLatency: mine, roundRobin: rr } = await main({ requests: 5_000, seed: 9 });
    expect(mine.latency.p99).toBeLessThan(rr.latency.p99);
  });
});
