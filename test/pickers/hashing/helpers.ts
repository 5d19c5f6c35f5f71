import fc from 'fast-check';
import { expect } from 'vitest';
import type { Picker, PickRequest, ShardState } from '../../../src/base/types.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';

/** A plain, mutable ShardState (tests move `inFlight` by hand). */
export interface TestShard extends ShardState<string> {
  inFlight: number;
  index: number;
}

export function shard(id: string, index: number, weight = 1): TestShard {
  return {
    id,
    target: `http://${id}`,
    weight,
    zone: undefined,
    labels: {},
    index,
    inFlight: 0,
    bytesInFlight: 0,
    limit: 1_000_000,
    rttMs: 1,
    load: 0,
    cost: 0,
  };
}

/** Shards with the given ids, indexed by position (the membership order). */
export function shardsOf(ids: readonly string[], weights?: readonly number[]): TestShard[] {
  return ids.map((id, i) => shard(id, i, weights?.[i] ?? 1));
}

export function shards(n: number, weights?: readonly number[]): TestShard[] {
  return shardsOf(
    Array.from({ length: n }, (_, i) => `shard-${i}`),
    weights,
  );
}

/** A reusable request, as the balancer passes one. */
export function request(key?: PickRequest['key'], totalInFlight = 0): PickRequest {
  return { key, attempt: 1, random: () => 0.5, totalInFlight };
}

export function keys(count: number, prefix = 'key-'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i}`);
}

/** The id each key maps to, among `offered` (default: the whole membership given to rebuild). */
export function mapping(picker: Picker, offered: readonly ShardState[], ks: readonly string[]) {
  const req = request();
  const out: (string | undefined)[] = new Array(ks.length);
  for (let i = 0; i < ks.length; i++) {
    req.key = ks[i];
    out[i] = picker.pick(offered, req)?.id;
  }
  return out;
}

/** Keys per shard index, and max/mean. */
export function balance(picker: Picker, all: readonly ShardState[], count: number) {
  const counts = new Float64Array(all.length);
  const req = request();
  for (let i = 0; i < count; i++) {
    req.key = `key-${i}`;
    counts[picker.pick(all, req)!.index]!++;
  }
  let max = 0;
  for (const c of counts) max = Math.max(max, c);
  return { counts, maxOverMean: max / (count / all.length) };
}

/** Shards re-indexed after an insertion or removal, keeping ids and weights. */
export function reindexed(list: readonly TestShard[]): TestShard[] {
  return list.map((s, i) => shard(s.id, i, s.weight));
}

/** Keys whose shard changed from `before` to `after`, split by whether the move was allowed. */
export function moves(
  before: readonly (string | undefined)[],
  after: readonly (string | undefined)[],
  allowed: (from: string | undefined, to: string | undefined) => boolean,
) {
  let moved = 0;
  let illegal = 0;
  for (let i = 0; i < before.length; i++) {
    if (before[i] === after[i]) continue;
    moved++;
    if (!allowed(before[i], after[i])) illegal++;
  }
  return { moved, illegal };
}

/**
 * Property: removing any one shard of 2–24 moves exactly the keys it owned, and only those
 * (shared by the ring and rendezvous suites; Maglev only bounds its movement).
 */
export function assertRemovalMovesOnlyOwnedKeys(
  algorithm: 'ring' | 'rendezvous',
  ks: readonly string[],
  seed: number,
): void {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 24 }), fc.nat(), (n, which) => {
      const before = shards(n);
      const gone = `shard-${which % n}`;
      const picker = consistentHash({ algorithm });
      picker.rebuild(before);
      const was = mapping(picker, before, ks);
      const after = reindexed(before.filter((s) => s.id !== gone));
      picker.rebuild(after);
      const { moved, illegal } = moves(was, mapping(picker, after, ks), (from) => from === gone);
      expect(illegal).toBe(0);
      expect(moved).toBe(was.filter((id) => id === gone).length);
    }),
    { numRuns: 25, seed },
  );
}
