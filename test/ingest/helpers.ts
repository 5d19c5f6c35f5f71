/**
 * Helpers of the ingestion tests: a small fleet on a manual clock, and a way to run an ingestion
 * to its end on virtual time.
 */
import type { Balancer, Picker } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { makeBalancer, shardsOf, type TestBalancerOptions, tick } from '../helpers.js';

export interface Rec {
  id: number;
  key?: string;
}

/** `n` records with ids 0 … n − 1. */
export function records(n: number, key?: (id: number) => string): Rec[] {
  return Array.from({ length: n }, (_, id) => (key === undefined ? { id } : { id, key: key(id) }));
}

/** A balancer of `shards` shards named a, b, c … on `clock`, seeded. */
export function fleet(
  clock: ManualClock,
  options: Omit<TestBalancerOptions<string>, 'shards'> & {
    shards?: number;
    picker?: Picker;
  } = {},
): Balancer<string> {
  const { shards = 2, ...rest } = options;
  return makeBalancer({
    clock,
    shards: shardsOf(Array.from({ length: shards }, (_, i) => String.fromCharCode(97 + i))),
    maxInFlightPerShard: 5,
    maxQueued: 10,
    random: seededRandom(3),
    ...rest,
  }).balancer;
}

/** How a promise ended, after moving virtual time 1 ms at a time until it did (bounded). */
export async function settle<R>(
  clock: ManualClock,
  promise: Promise<R>,
  limitMs = 100_000,
): Promise<{ ok: true; value: R } | { ok: false; error: unknown }> {
  let outcome: { ok: true; value: R } | { ok: false; error: unknown } | undefined;
  promise.then(
    (value) => {
      outcome = { ok: true, value };
    },
    (error: unknown) => {
      outcome = { ok: false, error };
    },
  );
  for (let t = 0; outcome === undefined; t++) {
    if (t > limitMs) throw new Error(`not settled after ${limitMs} ms of virtual time`);
    await tick(clock, 1);
  }
  return outcome;
}

/** Runs `promise` to its end on virtual time; returns its value or throws its error. */
export async function run<R>(
  clock: ManualClock,
  promise: Promise<R>,
  limitMs?: number,
): Promise<R> {
  const outcome = await settle(clock, promise, limitMs);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** The ids of `recs`, ascending. */
export function ids(recs: readonly { id: number }[]): number[] {
  return recs.map((r) => r.id).sort((a, b) => a - b);
}

export { ManualClock, seededRandom };
