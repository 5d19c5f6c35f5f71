/**
 * Shared helpers of the core tests: a microtask flush, tasks that settle on virtual time, plain
 * `ShardState`-like objects for testing pickers on their own, and the builder of a balancer on
 * virtual time (`makeBalancer`, `shardsOf`) with a key for a chosen home (`keyHomedOn`) and the events it emits (`recorded`).
 */
import { afterEach, beforeEach } from 'vitest';
import type { BalancerEvents } from '../src/base/events.js';
import { Balancer, type BalancerOptions, type ShardSpec, type ShardState } from '../src/index.js';
import { ManualClock, seededRandom } from '../src/testing/index.js';

/** Lets every pending promise callback run (settlement goes through them). */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Advances the clock by `ms`, stopping at every timer on the way and flushing after it, so work
 * that a settlement starts (a queued run, a retry) gets its own timers in time to fire.
 */
export async function tick(clock: ManualClock, ms: number): Promise<void> {
  const target = clock.now() + ms;
  await flush();
  for (;;) {
    const next = clock.nextTimerAt();
    if (next === undefined || next > target) break;
    clock.advanceTo(next);
    await flush();
  }
  clock.advanceTo(target);
  await flush();
}

/** A task that resolves with `value` after `ms` of virtual time. */
export function resolveAfter<R>(clock: ManualClock, ms: number, value: R): Promise<R> {
  return new Promise((resolve) => {
    clock.setTimer(() => resolve(value), ms);
  });
}

/** A task that rejects with `error` after `ms` of virtual time. */
export function failAfter(clock: ManualClock, ms: number, error: unknown): Promise<never> {
  return new Promise((_resolve, reject) => {
    clock.setTimer(() => reject(error), ms);
  });
}

/** Tracks how a promise settled, without leaving a rejection unhandled. */
export interface Outcome<R> {
  settled: boolean;
  ok: boolean | undefined;
  value: R | undefined;
  error: unknown;
  count: number;
}

export function track<R>(promise: Promise<R>): Outcome<R> {
  const outcome: Outcome<R> = {
    settled: false,
    ok: undefined,
    value: undefined,
    error: undefined,
    count: 0,
  };
  promise.then(
    (value) => {
      outcome.settled = true;
      outcome.ok = true;
      outcome.value = value;
      outcome.count++;
    },
    (error) => {
      outcome.settled = true;
      outcome.ok = false;
      outcome.error = error;
      outcome.count++;
    },
  );
  return outcome;
}

/** A plain shard for picker tests, with fixed load figures. */
export function fakeShard(
  id: string,
  index: number,
  figures: {
    weight?: number;
    inFlight?: number;
    rttMs?: number;
    load?: number;
    cost?: number;
  } = {},
): ShardState {
  const inFlight = figures.inFlight ?? 0;
  const rttMs = figures.rttMs ?? 30;
  return {
    id,
    target: id,
    weight: figures.weight ?? 1,
    zone: undefined,
    labels: {},
    index,
    inFlight,
    bytesInFlight: 0,
    limit: 32,
    rttMs,
    load: figures.load ?? inFlight,
    cost: figures.cost ?? rttMs * (inFlight + 1),
  };
}

/** A random source that replays `values` in order (then throws: the test used too many draws). */
export function scripted(values: readonly number[]): () => number {
  let i = 0;
  return () => {
    if (i >= values.length)
      throw new Error(`scripted random exhausted after ${values.length} draws`);
    return values[i++]!;
  };
}

/** Counts per id. */
export function countBy(ids: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of ids) counts[id] = (counts[id] ?? 0) + 1;
  return counts;
}

/**
 * The names of the process warnings (`MaxListenersExceededWarning`, `TimeoutOverflowWarning`, …)
 * emitted during each test of the calling `describe`: emptied before each, unhooked after.
 */
export function processWarnings(): string[] {
  const names: string[] = [];
  const onWarning = (warning: Error) => names.push(warning.name);
  beforeEach(() => {
    names.length = 0;
    process.on('warning', onWarning);
  });
  afterEach(() => {
    process.off('warning', onWarning);
  });
  return names;
}

/**
 * Options of a test balancer: any `Balancer` option, passed through unchanged; `shards` may be
 * left out (see `makeBalancer`) and the clock, when given, is a `ManualClock` the test drives.
 */
export type TestBalancerOptions<T> = Partial<Omit<BalancerOptions<T>, 'clock'>> & {
  clock?: ManualClock;
};

/** A balancer on virtual time and the clock that drives it. */
export interface TestBalancer<T> {
  clock: ManualClock;
  balancer: Balancer<T>;
}

/**
 * A balancer on a `ManualClock` (a fresh one unless `options.clock` is given) with
 * `seededRandom(1)`, then `options` over those: a test states what matters to it, and another seed
 * (`random: seededRandom(7)`) or the default entropy (`random: undefined`) when it needs one.
 * Without `options.shards`, the shards are `ids` with string targets `t-<id>`.
 *
 * @example
 * const { clock, balancer } = makeBalancer({ shards: shardsOf(['a', 'b', 'c']), retry: false });
 */
export function makeBalancer<T>(
  options: TestBalancerOptions<T> & { shards: ShardSpec<T>[] },
): TestBalancer<T>;
export function makeBalancer(
  options?: TestBalancerOptions<string>,
  ids?: readonly string[],
): TestBalancer<string>;
export function makeBalancer<T>(
  options: TestBalancerOptions<T> = {},
  ids: readonly string[] = ['a', 'b'],
): TestBalancer<T> {
  const clock = options.clock ?? new ManualClock();
  const balancer = new Balancer<T>({
    // Only the string overload leaves `shards` out.
    shards: ids.map((id) => ({ id, target: `t-${id}` as T })),
    random: seededRandom(1),
    ...options,
    clock,
  });
  return { clock, balancer };
}

/** Plain shard specs whose target is the id itself: `shardsOf(['a'])` is `[{ id: 'a', target: 'a' }]`. */
export function shardsOf(ids: readonly string[]): ShardSpec<string>[] {
  return ids.map((id) => ({ id, target: id }));
}

/**
 * The first key `<prefix>0`, `<prefix>1`, … whose home is `shardId` (a keyed test's key for a
 * chosen shard); throws if none of the first 10 000 is.
 */
export function keyHomedOn(
  balancer: { homeOf(key: string): string | undefined },
  shardId: string,
  prefix = 'k',
): string {
  for (let i = 0; i < 10_000; i++)
    if (balancer.homeOf(`${prefix}${i}`) === shardId) return `${prefix}${i}`;
  throw new Error(`no key of the first 10 000 has its home on ${shardId}`);
}

/** The balancer events that carry a payload, and the payload of each. */
type Payload<K extends keyof BalancerEvents> = BalancerEvents[K] extends [infer P] ? P : never;

/** Every `name` event `balancer` emits from now on, in order (a live list the test reads). */
export function recorded<K extends keyof BalancerEvents>(
  balancer: Balancer<any, any>,
  name: K,
): Payload<K>[] {
  const events: Payload<K>[] = [];
  const push = (payload: Payload<K>) => events.push(payload);
  balancer.on(name, push as never);
  return events;
}

/** What `promise` settles with: its value, or the error it rejected with. */
export async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return await promise;
  } catch (error) {
    return error;
  }
}

/**
 * Resolves once `done()` holds, polling every `everyMs` of real time (for real servers and
 * processes); false if `withinMs` passes first.
 */
export async function until(
  done: () => boolean | Promise<boolean>,
  withinMs: number,
  everyMs = 50,
): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    if (await done()) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
