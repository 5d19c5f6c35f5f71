import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Balancer,
  BalancerClosedError,
  type BalancerOptions,
  consistentHash,
  leastInFlight,
  p2c,
  peakEwma,
  QueueFullError,
  random,
  roundRobin,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush } from '../helpers.js';

type Kind = 'ok' | 'reject' | 'syncThrow' | 'never';

interface RunPlan {
  kind: Kind;
  delayMs: number;
  admitAtMs: number;
  /** Caller abort, ms after time 0 (may fall before admission: then the run is refused). */
  abortAtMs: number | undefined;
  idempotent: boolean;
  notSent: boolean;
}

interface Plan {
  shards: number;
  perShard: number;
  maxQueued: number;
  overflow: 'wait' | 'reject';
  timeoutMs: number;
  /** consistentHash: strict affinity, each run keyed `k0`…`k3` (runs wait in their home's line). */
  picker: 'roundRobin' | 'p2c' | 'peakEwma' | 'leastInFlight' | 'random' | 'consistentHash';
  retry: false | { attempts: number; baseMs: number; budget: boolean };
  health: false | { consecutiveFailures: number; baseEjectionMs: number };
  seed: number;
  runs: RunPlan[];
  close: { atMs: number; drain: boolean } | undefined;
  /** A shard leaves the membership at a random time (the run's other work must still settle). */
  removal: { atMs: number; index: number; drain: boolean } | undefined;
}

const runPlan: fc.Arbitrary<RunPlan> = fc.record({
  kind: fc.constantFrom<Kind>('ok', 'ok', 'reject', 'syncThrow', 'never'),
  delayMs: fc.integer({ min: 0, max: 60 }),
  admitAtMs: fc.integer({ min: 0, max: 100 }),
  abortAtMs: fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined }),
  idempotent: fc.boolean(),
  notSent: fc.boolean(),
});

const plan: fc.Arbitrary<Plan> = fc.record({
  shards: fc.integer({ min: 1, max: 4 }),
  perShard: fc.integer({ min: 1, max: 3 }),
  maxQueued: fc.integer({ min: 1, max: 8 }),
  overflow: fc.constantFrom<'wait' | 'reject'>('wait', 'reject'),
  timeoutMs: fc.integer({ min: 10, max: 80 }),
  picker: fc.constantFrom<Plan['picker']>(
    'roundRobin',
    'p2c',
    'peakEwma',
    'leastInFlight',
    'random',
    'consistentHash',
  ),
  retry: fc.oneof(
    fc.constant<false>(false),
    fc.record({
      attempts: fc.integer({ min: 1, max: 3 }),
      baseMs: fc.integer({ min: 0, max: 20 }),
      budget: fc.boolean(),
    }),
  ),
  health: fc.oneof(
    fc.constant<false>(false),
    fc.record({
      consecutiveFailures: fc.integer({ min: 1, max: 3 }),
      baseEjectionMs: fc.integer({ min: 1, max: 100 }),
    }),
  ),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  runs: fc.array(runPlan, { minLength: 1, maxLength: 25 }),
  close: fc.option(fc.record({ atMs: fc.integer({ min: 0, max: 150 }), drain: fc.boolean() }), {
    nil: undefined,
  }),
  removal: fc.option(
    fc.record({
      atMs: fc.integer({ min: 0, max: 150 }),
      index: fc.integer({ min: 0, max: 3 }),
      drain: fc.boolean(),
    }),
    { nil: undefined },
  ),
});

const PICKERS = {
  roundRobin,
  p2c,
  peakEwma,
  leastInFlight,
  random,
  consistentHash: () => consistentHash(),
};

interface Tracked {
  handlerCalls: number;
  ok: boolean | undefined;
  error: unknown;
  settledAtMs: number;
  /** Not admitted: closed, or aborted, before run() was called (counted as refused). */
  refusedAtCall: boolean;
  closedAtCall: boolean;
  lateCalls: number;
}

async function check(p: Plan): Promise<void> {
  const clock = new ManualClock();
  const options: BalancerOptions<string> = {
    shards: Array.from({ length: p.shards }, (_, i) => ({ id: `s${i}`, target: `s${i}` })),
    picker: PICKERS[p.picker](),
    maxInFlightPerShard: p.perShard,
    maxQueued: p.maxQueued,
    overflow: p.overflow,
    timeoutMs: p.timeoutMs,
    retry:
      p.retry === false
        ? false
        : {
            attempts: p.retry.attempts,
            backoff: { baseMs: p.retry.baseMs, maxMs: 50 },
            budget: p.retry.budget ? { ratio: 0.2, minPerSecond: 1, ttlMs: 1_000 } : false,
          },
    health: p.health === false ? false : { ...p.health, maxEjectionMs: 1_000 },
    clock,
    random: seededRandom(p.seed),
  };
  const balancer = new Balancer<string>(options);
  const tracked: Tracked[] = [];
  let closing: { done: boolean } | undefined;
  let removed = p.removal === undefined;
  let mostQueued = 0;

  p.runs.forEach((r, i) => {
    const controller = r.abortAtMs === undefined ? undefined : new AbortController();
    if (controller !== undefined) {
      clock.setTimer(() => controller.abort(new Error(`abort ${i}`)), r.abortAtMs!);
    }
    clock.setTimer(() => {
      const t: Tracked = {
        handlerCalls: 0,
        ok: undefined,
        error: undefined,
        settledAtMs: Number.POSITIVE_INFINITY,
        refusedAtCall: balancer.closed || controller?.signal.aborted === true,
        closedAtCall: balancer.closed,
        lateCalls: 0,
      };
      tracked.push(t);
      const fn = () => {
        if (clock.now() > t.settledAtMs) t.lateCalls++;
        const error = Object.assign(new Error(`fail ${i}`), r.notSent ? { notSent: true } : {});
        switch (r.kind) {
          case 'ok':
            return new Promise<number>((resolve) => clock.setTimer(() => resolve(i), r.delayMs));
          case 'reject':
            return new Promise<never>((_res, reject) =>
              clock.setTimer(() => reject(error), r.delayMs),
            );
          case 'syncThrow':
            throw error;
          case 'never':
            return new Promise<never>(() => {});
        }
      };
      const key = p.picker === 'consistentHash' ? `k${i % 4}` : undefined;
      const running = balancer.run(fn, {
        idempotent: r.idempotent,
        signal: controller?.signal,
        key,
      });
      mostQueued = Math.max(mostQueued, balancer.stats().queued);
      running.then(
        () => {
          t.handlerCalls++;
          t.ok = true;
          t.settledAtMs = Math.min(t.settledAtMs, clock.now());
        },
        (error: unknown) => {
          t.handlerCalls++;
          t.ok = false;
          t.error = error;
          t.settledAtMs = Math.min(t.settledAtMs, clock.now());
        },
      );
    }, r.admitAtMs);
  });
  if (p.removal !== undefined) {
    const removal = p.removal;
    clock.setTimer(() => {
      const id = `s${removal.index % p.shards}`;
      void balancer.removeShard(id, { drain: removal.drain }).then(() => {
        removed = true;
      });
    }, removal.atMs);
  }
  if (p.close !== undefined) {
    const close = p.close;
    clock.setTimer(() => {
      const state = { done: false };
      closing = state;
      void balancer.close({ drain: close.drain }).then(() => {
        state.done = true;
      });
    }, close.atMs);
  }

  const allSettled = () =>
    tracked.length === p.runs.length && tracked.every((t) => t.handlerCalls > 0);
  for (let guard = 0; guard < 5_000; guard++) {
    await flush();
    if (allSettled() && removed && (p.close === undefined || closing?.done === true)) break;
    const next = clock.nextTimerAt();
    if (next === undefined) break;
    clock.advanceTo(next);
  }
  await flush();

  // every run settled, exactly once
  expect(tracked).toHaveLength(p.runs.length);
  expect(tracked.filter((t) => t.handlerCalls !== 1)).toEqual([]);
  expect(tracked.reduce((n, t) => n + t.handlerCalls, 0)).toBe(p.runs.length);
  // fn is never called for a run that has already settled
  expect(tracked.reduce((n, t) => n + t.lateCalls, 0)).toBe(0);

  // runs refused before admission: closed, already aborted, or the queue full (overflow: 'reject')
  const notAdmitted = tracked.filter(
    (t) => t.refusedAtCall || (t.ok === false && t.error instanceof QueueFullError),
  );
  if (p.overflow === 'wait') {
    expect(tracked.filter((t) => t.error instanceof QueueFullError)).toEqual([]);
  } else {
    // 'reject' bounds what waits, in the queue and in the home lines alike
    expect(mostQueued).toBeLessThanOrEqual(p.maxQueued);
  }
  const admitted = tracked.filter((t) => !notAdmitted.includes(t));
  const stats = balancer.stats();
  expect(stats.completed + stats.failed).toBe(admitted.length);
  expect(stats.completed).toBe(admitted.filter((t) => t.ok === true).length);
  expect(stats.failed).toBe(admitted.filter((t) => t.ok === false).length);
  // every refusal is counted once, as refused: the three figures account for every call
  expect(stats.refused).toBe(notAdmitted.length);
  expect(stats.inFlight).toBe(0);
  expect(stats.queued).toBe(0);
  expect(stats.shards.map((s) => s.inFlight)).toEqual(stats.shards.map(() => 0));
  expect(balancer.shards.map((s) => s.bytesInFlight)).toEqual(stats.shards.map(() => 0));

  // close() resolved, and every run offered after it was refused with BalancerClosedError
  if (p.close !== undefined) {
    expect(closing?.done).toBe(true);
    for (const t of tracked.filter((x) => x.closedAtCall)) {
      expect(t.error).toBeInstanceOf(BalancerClosedError);
    }
    // without drain, nothing admitted before the close succeeded after it
    if (!p.close.drain) {
      const lateSuccesses = tracked.filter((t) => t.ok === true && t.settledAtMs > p.close!.atMs);
      expect(lateSuccesses).toEqual([]);
    }
  }
  // a removed shard's promise resolves once its in-flight work is over
  expect(removed).toBe(true);
  let drained = false;
  void balancer.drain().then(() => {
    drained = true;
  });
  await flush();
  expect(drained).toBe(true);
}

describe('every run settles exactly once (property)', () => {
  it('random mixes of success, failure, sync throws, hangs cut by timeout, aborts, a removal and close', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        await check(p);
      }),
      { numRuns: 200, seed: 20_240_611 },
    );
  });
});
