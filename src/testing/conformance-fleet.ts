/**
 * The shards `pickerConformance` offers: frozen memberships whose load figures sit behind getters
 * (a picker's write throws), loads the checks reshuffle between picks, and the subsets the balancer
 * would offer after filtering.
 */
import type { RandomSource, ShardState } from '../base/types.js';

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
    const labels = Object.freeze({});
    return readOnly({
      id: () => id,
      target: () => id,
      weight: () => weight,
      zone: () => undefined,
      labels: () => labels,
      index: () => i,
      limit: () => 32,
      bytesInFlight: () => 0,
      inFlight: () => inFlight[i]!,
      rttMs: () => rttMs[i]!,
      load: () => inFlight[i]!,
      cost: () => rttMs[i]! * (inFlight[i]! + 1),
    }) as unknown as ShardState;
  });
  return { shards: readOnlyList(shards), inFlight, rttMs };
}

/**
 * A frozen object whose every field is a getter with a setter that throws: a write throws in
 * sloppy-mode code too (a plain CommonJS picker), where a write to a frozen data field is
 * silently dropped and would pass unseen.
 */
export function readOnly(fields: Record<string, () => unknown>): object {
  const view = {};
  for (const [name, get] of Object.entries(fields)) {
    Object.defineProperty(view, name, {
      get,
      set() {
        throw new TypeError(`Cannot set ${name}: a shard is read-only`);
      },
      enumerable: true,
    });
  }
  // Not a Proxy: a view must stay a plain object (`structuredClone`, `Object.freeze` again).
  return Object.freeze(view);
}

/** A frozen list that throws on any write, in sloppy-mode code too (see {@link readOnly}). */
export function readOnlyList<S>(list: readonly S[]): readonly S[] {
  const refuse = (): never => {
    throw new TypeError('Cannot write to the shard list: it is read-only');
  };
  return new Proxy(Object.freeze([...list]), {
    set: refuse,
    defineProperty: refuse,
    deleteProperty: refuse,
  });
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
  return readOnlyList(out);
}
