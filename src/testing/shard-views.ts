/**
 * Plain, frozen `ShardState` objects, for calling a picker on its own (no balancer): the remap
 * measure and the conformance checks build their memberships from these.
 */
import { ConfigError } from '../errors.js';
import type { ShardState } from '../types.js';

/** A shard as {@link remapFraction} takes it: an id, or a spec without a required target. */
export type ShardLike =
  | string
  | {
      id: string;
      target?: unknown;
      weight?: number;
      zone?: string;
      labels?: Record<string, string>;
    };

/** Load figures of a view (all idle by default). */
export interface ViewLoad {
  inFlight?: number;
  rttMs?: number;
  limit?: number;
}

/** A frozen `ShardState` for `shard` at position `index`. */
export function shardView(shard: ShardLike, index: number, load: ViewLoad = {}): ShardState {
  const spec = typeof shard === 'string' ? { id: shard } : shard;
  const inFlight = load.inFlight ?? 0;
  const rttMs = load.rttMs ?? 30;
  return Object.freeze({
    id: spec.id,
    target: spec.target ?? spec.id,
    weight: spec.weight ?? 1,
    zone: spec.zone,
    labels: Object.freeze({ ...(spec.labels ?? {}) }),
    index,
    inFlight,
    bytesInFlight: 0,
    limit: load.limit ?? 32,
    rttMs,
    load: inFlight,
    cost: rttMs * (inFlight + 1),
  });
}

/** Frozen views of `shards`, in order, with unique ids checked. */
export function shardViews(field: string, shards: readonly ShardLike[]): readonly ShardState[] {
  if (!Array.isArray(shards)) throw new ConfigError(field, 'must be an array of shards', shards);
  const seen = new Set<string>();
  const views = shards.map((shard, i) => {
    const id = typeof shard === 'string' ? shard : (shard as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' || id.length === 0) {
      throw new ConfigError(`${field}[${i}].id`, 'must be a non-empty string', id);
    }
    if (seen.has(id))
      throw new ConfigError(`${field}[${i}].id`, 'must be unique, and is used twice', id);
    seen.add(id);
    return shardView(shard, i);
  });
  return Object.freeze(views);
}
