/**
 * Plain, frozen `ShardState` objects, for calling a picker on its own (no balancer) with the load
 * figures a test chooses. The remap measure builds its memberships from these too.
 */
import { ConfigError } from '../base/errors.js';
import type { ShardState } from '../base/types.js';
import {
  checkKnownKeys,
  checkObject,
  denseArray,
  duration,
  isPlainObject,
  nonNegativeInt,
  positiveFinite,
  positiveInt,
} from '../base/validate.js';
import { readOnly } from './conformance-fleet.js';

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

/**
 * A shard as {@link shardViews} takes it: identity, plus the load figures a picker reads. Every
 * figure is optional; the defaults are an idle shard, and `load` and `cost` follow from the others
 * as the balancer computes them (without push-back).
 */
export interface ShardViewSpec {
  id: string;
  /** Default: the id. */
  target?: unknown;
  /** Default 1. */
  weight?: number;
  zone?: string;
  labels?: Record<string, string>;
  /** Calls outstanding (default 0). */
  inFlight?: number;
  /** Bytes outstanding (default 0). */
  bytesInFlight?: number;
  /** In-flight cap (default 32). */
  limit?: number;
  /** Peak-EWMA latency estimate, ms (default 30, the estimate before a first sample). */
  rttMs?: number;
  /** Load the shard reported about itself (default none, counted as 0). */
  reportedLoad?: number;
  /** Default `inFlight + reportedLoad`; set it higher to stand for a push-back penalty. */
  load?: number;
  /** Default `rttMs × (inFlight + 1 + reportedLoad)`. */
  cost?: number;
}

const KEYS = [
  'id',
  'target',
  'weight',
  'zone',
  'labels',
  'inFlight',
  'bytesInFlight',
  'limit',
  'rttMs',
  'reportedLoad',
  'load',
  'cost',
];

function figure(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ConfigError(field, 'must be a finite number ≥ 0', value);
  }
  return value;
}

function view(shard: string | ShardViewSpec, index: number, field: string): ShardState {
  if (typeof shard !== 'string') {
    checkObject(field, shard);
    checkKnownKeys(field, shard, KEYS);
  }
  const spec: ShardViewSpec = typeof shard === 'string' ? { id: shard } : shard;
  if (typeof spec.id !== 'string' || spec.id.length === 0) {
    throw new ConfigError(`${field}.id`, 'must be a non-empty string', spec.id);
  }
  const at = (name: string) => `${field}.${name}`;
  const inFlight = spec.inFlight === undefined ? 0 : nonNegativeInt(at('inFlight'), spec.inFlight);
  const rttMs = spec.rttMs === undefined ? 30 : duration(at('rttMs'), spec.rttMs);
  const reported =
    spec.reportedLoad === undefined ? undefined : figure(at('reportedLoad'), spec.reportedLoad);
  const extra = reported ?? 0;
  return readOnlyView({
    id: spec.id,
    target: spec.target ?? spec.id,
    weight: spec.weight === undefined ? 1 : positiveFinite(at('weight'), spec.weight),
    zone: spec.zone === undefined ? undefined : text(at('zone'), spec.zone),
    labels: readOnlyLabels(labelsOf(at('labels'), spec.labels)),
    index,
    inFlight,
    bytesInFlight:
      spec.bytesInFlight === undefined ? 0 : figure(at('bytesInFlight'), spec.bytesInFlight),
    limit: spec.limit === undefined ? 32 : positiveInt(at('limit'), spec.limit, true),
    rttMs,
    load: spec.load === undefined ? inFlight + extra : figure(at('load'), spec.load),
    reportedLoad: reported,
    cost: spec.cost === undefined ? rttMs * (inFlight + 1 + extra) : figure(at('cost'), spec.cost),
  });
}

/**
 * Frozen `ShardState`s for driving a picker directly, in membership order (`index` 0, 1, …), with
 * the load figures the test sets: a string is an idle shard with that id. Ids must be unique.
 * Frozen, so a picker that writes to a shard throws (pickers read figures, never write them).
 * `field` names the argument in a `ConfigError`.
 *
 * @example
 * import { p2c } from 'shardwise';
 * import { seededRandom, shardViews } from 'shardwise/testing';
 *
 * const [busy, idle] = shardViews([{ id: 'busy', inFlight: 9 }, { id: 'idle', inFlight: 1 }]);
 * const picked = p2c().pick([busy!, idle!], { attempt: 1, random: seededRandom(1), totalInFlight: 10 });
 * // picked === idle: of two shards drawn, P2C keeps the less loaded
 */
export function shardViews(
  shards: readonly (string | ShardViewSpec)[],
  field = 'shards',
): readonly ShardState[] {
  denseArray(field, shards, 'shards');
  const seen = new Set<string>();
  const views = shards.map((shard, i) => {
    const id = typeof shard === 'string' ? shard : (shard as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' || id.length === 0) {
      throw new ConfigError(`${field}[${i}].id`, 'must be a non-empty string', id);
    }
    if (seen.has(id))
      throw new ConfigError(`${field}[${i}].id`, 'must be unique, and is used twice', id);
    seen.add(id);
    return view(shard, i, `${field}[${i}]`);
  });
  return Object.freeze(views);
}

function text(field: string, value: unknown): string {
  if (typeof value !== 'string') throw new ConfigError(field, 'must be a string', value);
  return value;
}

/** Labels as a shard spec takes them: a plain object of strings. */
function labelsOf(field: string, labels: unknown): Record<string, string> {
  if (labels === undefined) return {};
  if (!isPlainObject(labels)) {
    throw new ConfigError(field, 'must be a plain object of label name → string', labels);
  }
  for (const [name, value] of Object.entries(labels as object)) text(`${field}.${name}`, value);
  return labels as Record<string, string>;
}

/**
 * A view of `fields` whose every field throws on a write, in sloppy-mode code too (a CommonJS
 * picker), where a write to a frozen data field would be dropped unseen.
 */
function readOnlyView(fields: Omit<ShardState, 'target'> & { target: unknown }): ShardState {
  const getters: Record<string, () => unknown> = {};
  for (const [name, value] of Object.entries(fields)) getters[name] = () => value;
  return readOnly(getters) as ShardState;
}

/**
 * A shard's labels, read-only like the view: a write to a label throws in sloppy-mode code too
 * (accessors, not a Proxy, so the labels stay a plain object `structuredClone` can copy).
 */
function readOnlyLabels(
  labels: Readonly<Record<string, string>>,
): Readonly<Record<string, string>> {
  const getters: Record<string, () => unknown> = {};
  for (const [name, value] of Object.entries(labels)) getters[name] = () => value;
  return readOnly(getters) as Readonly<Record<string, string>>;
}
