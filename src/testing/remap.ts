/**
 * How many keys move when membership changes: the figure that tells consistent hashing (~1/(n+1)
 * of the keys move when a shard joins n) from modulo hashing (~n/(n+1) move).
 */
import { ConfigError } from '../base/errors.js';
import { createRandom } from '../base/random.js';
import type { Key, Picker, PickRequest } from '../base/types.js';
import { checkKnownKeys, checkObject, denseArray } from '../base/validate.js';
import { checkPicker } from '../core/options.js';
import { type ShardLike, shardViews } from './shard-views.js';

/** Options of {@link remapFraction}. */
export interface RemapOptions {
  /**
   * A factory (a fresh picker for each membership, as two balancers would have) or one picker
   * (rebuilt with the new membership, as `setShards` does on a live balancer).
   */
  picker: Picker | (() => Picker);
  /** Membership before the change: ids or shard specs (`target` optional), in order. */
  before: readonly ShardLike[];
  /** Membership after the change. */
  after: readonly ShardLike[];
  /** `n` (keys `key-0` … `key-(n−1)`, n at most 10 000 000) or the keys themselves. */
  keys: number | readonly Key[];
  /** Seed of the random source pickers get (default 1); each membership starts it afresh. */
  seed?: number;
}

/**
 * The fraction of `keys` whose chosen shard id differs between `before` and `after`, all shards
 * idle. A key that had no shard (the picker returned undefined) on one side and one on the other
 * counts as moved.
 *
 * @example
 * const moved = remapFraction({
 *   picker: () => consistentHash(),
 *   before: ['a', 'b', 'c', 'd'],
 *   after: ['a', 'b', 'c', 'd', 'e'],
 *   keys: 100_000,
 * }); // ≈ 0.2
 */
export function remapFraction(options: RemapOptions): number {
  checkObject('remapFraction options', options);
  checkKnownKeys('remapFraction', options, ['picker', 'before', 'after', 'keys', 'seed']);
  const { picker, before, after } = options;
  if (typeof picker !== 'function') checkPicker(picker);
  const keys = keyList(options.keys);
  const seed = options.seed ?? 1;
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed)) {
    throw new ConfigError('seed', 'must be an integer', seed);
  }
  const oneInstance = typeof picker === 'function' ? undefined : picker;
  const choose = (field: string, shards: readonly ShardLike[]): (string | undefined)[] => {
    const views = shardViews(shards, field);
    const instance = oneInstance ?? (picker as () => Picker)();
    if (oneInstance === undefined) checkPicker(instance);
    instance.rebuild?.(views);
    const request: PickRequest = {
      key: undefined,
      attempt: 1,
      random: createRandom(seed),
      totalInFlight: 0,
    };
    return keys.map((key) => {
      request.key = key;
      request.attempt = 1;
      return instance.pick(views, request)?.id;
    });
  };
  const first = choose('before', before);
  const second = choose('after', after);
  let moved = 0;
  for (let i = 0; i < keys.length; i++) if (first[i] !== second[i]) moved++;
  return keys.length === 0 ? 0 : moved / keys.length;
}

/** The most keys `remapFraction` makes itself: each is a string, and two picks are kept per key. */
export const MAX_REMAP_KEYS = 10_000_000;

function keyList(keys: number | readonly Key[]): readonly Key[] {
  if (typeof keys === 'number') {
    if (!Number.isInteger(keys) || keys < 1 || keys > MAX_REMAP_KEYS) {
      throw new ConfigError(
        'keys',
        `must be an integer from 1 to ${MAX_REMAP_KEYS} or an array of keys`,
        keys,
      );
    }
    return Array.from({ length: keys }, (_, i) => `key-${i}`);
  }
  if (!Array.isArray(keys))
    throw new ConfigError('keys', 'must be a positive integer or an array of keys', keys);
  denseArray('keys', keys, 'keys');
  keys.forEach((key, i) => {
    if (typeof key !== 'string' && !(key instanceof Uint8Array)) {
      throw new ConfigError(`keys[${i}]`, 'must be a string or a Uint8Array', key);
    }
  });
  return keys;
}
