/**
 * The shards `pickerConformance` offers: frozen memberships whose load figures sit behind getters
 * (a picker's write throws), loads the checks reshuffle between picks, and the subsets the balancer
 * would offer after filtering.
 */
import type { RandomSource, ShardState } from '../types.js';

/** A membership and the load figures behind its shards' getters. */
export interface Membership {
  shards: readonly ShardState[];
  inFlight: Float64Array;
  rttMs: Float64Array;
}

/**
 * `n` frozen views `prefix-<from>` … with weights 1–3, and load figures behind getters (read-only:
 * a picker's write throws), as the balancer's `Shard`s present them.
 */
export function membership(
  n: number,
  prefix: string,
  random: RandomSource,
  from = 0,
  equal = false,
): Membership {
  const inFlight = new Float64Array(n);
  const rttMs = new Float64Array(n).fill(30);
  const shards = Array.from({ length: n }, (_, i): ShardState => {
    const id = `${prefix}-${from + i}`;
    const drawn = 1 + ((random() * 3) | 0);
    const weight = equal ? 1 : drawn;
    return Object.freeze({
      id,
      target: id,
      weight,
      zone: undefined,
      labels: Object.freeze({}),
      index: i,
      limit: 32,
      bytesInFlight: 0,
      get inFlight() {
        return inFlight[i]!;
      },
      get rttMs() {
        return rttMs[i]!;
      },
      get load() {
        return inFlight[i]!;
      },
      get cost() {
        return rttMs[i]! * (inFlight[i]! + 1);
      },
    });
  });
  return { shards: Object.freeze(shards), inFlight, rttMs };
}

export function shuffleLoads(m: Membership, random: RandomSource): void {
  for (let i = 0; i < m.inFlight.length; i++) {
    m.inFlight[i] = (random() * 8) | 0;
    m.rttMs[i] = 1 + random() * 100;
  }
}

export function totalInFlight(m: Membership): number {
  let total = 0;
  for (let i = 0; i < m.inFlight.length; i++) total += m.inFlight[i]!;
  return total;
}

/** A non-empty proper subset, in membership order (as the balancer filters). */
export function randomSubset(
  shards: readonly ShardState[],
  random: RandomSource,
): readonly ShardState[] {
  const out: ShardState[] = [];
  const skip = (random() * shards.length) | 0; // at least one left out
  for (let i = 0; i < shards.length; i++) if (i !== skip && random() < 0.6) out.push(shards[i]!);
  if (out.length === 0) out.push(shards[(skip + 1) % shards.length]!);
  return Object.freeze(out);
}
