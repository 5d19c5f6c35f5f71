import { ConfigError } from '../../base/errors.js';
import {
  checkKnownKeys,
  checkObject,
  checkPickerObject,
  oneOf,
  positiveInt,
} from '../../base/validate.js';
import { murmur3_32 } from '../../hash/murmur3.js';
import { Jump } from './jump.js';
import { checkTableSize, Maglev } from './maglev.js';
import { type HashOrder, KEY_SEED, type KeyHash } from './order.js';
import { ConsistentHash } from './picker.js';
import { Rendezvous } from './rendezvous.js';
import { MAX_VNODES, Ring } from './ring.js';
import type {
  Affinity,
  ConsistentHashOptions,
  ConsistentHashPicker,
  HashAlgorithm,
} from './types.js';

const ALGORITHMS: readonly HashAlgorithm[] = ['ring', 'maglev', 'rendezvous', 'jump'];
const AFFINITIES: readonly Affinity[] = ['strict', 'spill'];
const TWO_POW_31 = 2 ** 31;
const TWO_POW_32 = 2 ** 32;
const OPTIONS = ['algorithm', 'vnodes', 'tableSize', 'boundedLoad', 'affinity', 'hash', 'fallback'];

/**
 * Consistent hashing: a key goes to the same shard while membership is stable, a membership
 * change moves few keys, and with `boundedLoad` no shard piles up.
 *
 * Affinity is strict by default, as in Kafka's keyed partitioner: the balancer sends a keyed run
 * to its key's home shard only (`home()`), waiting while that shard is at its cap or ejected and
 * retrying there; only a membership change gives a key a new home. With `affinity: 'spill'` (or
 * `boundedLoad`) the run may move on along the key's own order instead — `pick()` is that walk: a
 * shard that is not offered (ejected, at its cap, excluded for a retry) or at the load bound is
 * skipped, so its keys go to their next shard and come back when it returns. When no shard in the
 * key's order is under the load bound, the key's first offered shard is returned anyway: refusing
 * would fail the run while shards can take it.
 *
 * @example
 * new Balancer({ shards, picker: consistentHash({ algorithm: 'maglev' }) });
 * balancer.run((shard) => put(shard.target, row), { key: row.userId });
 */
export function consistentHash(options: ConsistentHashOptions = {}): ConsistentHashPicker {
  checkObject('consistentHash options', options);
  checkKnownKeys('consistentHash', options, OPTIONS);
  const algorithm =
    options.algorithm === undefined
      ? 'ring'
      : oneOf('consistentHash.algorithm', options.algorithm, ALGORITHMS);
  only('vnodes', options.vnodes, algorithm, 'ring');
  only('tableSize', options.tableSize, algorithm, 'maglev');
  const vnodes = options.vnodes === undefined ? 160 : checkVnodes(options.vnodes);
  const tableSize = options.tableSize;
  if (tableSize !== undefined) checkTableSize('consistentHash.tableSize', tableSize);
  const c = options.boundedLoad;
  if (c !== undefined && (typeof c !== 'number' || !Number.isFinite(c) || c < 1)) {
    throw new ConfigError('consistentHash.boundedLoad', 'must be a finite number ≥ 1', c);
  }
  const affinity = checkAffinity(options.affinity, c);
  if (options.hash !== undefined && typeof options.hash !== 'function') {
    throw new ConfigError(
      'consistentHash.hash',
      'must be a function (key, seed) => uint32',
      options.hash,
    );
  }
  if (options.hash !== undefined) checkHashOutput(options.hash);
  const fallback = options.fallback;
  if (fallback !== undefined) checkPickerObject('consistentHash.fallback', fallback);
  if (fallback !== undefined && typeof fallback.pick !== 'function') {
    throw new ConfigError(
      'consistentHash.fallback',
      'must be a Picker (an object with pick())',
      fallback,
    );
  }
  const hash = options.hash ?? murmur3_32;
  const order: HashOrder =
    algorithm === 'ring'
      ? new Ring(vnodes, hash)
      : algorithm === 'maglev'
        ? new Maglev(tableSize, hash)
        : algorithm === 'rendezvous'
          ? new Rendezvous(hash)
          : new Jump(options.hash);
  return new ConsistentHash(algorithm, order, affinity, c, fallback);
}

function only(field: string, value: unknown, algorithm: HashAlgorithm, owner: HashAlgorithm): void {
  if (value !== undefined && algorithm !== owner) {
    throw new ConfigError(
      `consistentHash.${field}`,
      `applies only to algorithm '${owner}' (algorithm is '${algorithm}')`,
      value,
    );
  }
}

/**
 * A custom hash is asked once, for a string and a byte key: a NaN, a float or a string from it
 * would put every key at one point (`>>> 0` makes them 0), a silent imbalance; refuse it here.
 */
function checkHashOutput(hash: KeyHash): void {
  for (const key of ['shardwise', new Uint8Array([115, 119])]) {
    const h: unknown = hash(key, KEY_SEED);
    if (typeof h !== 'number' || !Number.isInteger(h) || h < -TWO_POW_31 || h >= TWO_POW_32) {
      throw new ConfigError(
        'consistentHash.hash',
        `must return a 32-bit integer (a uint32) for every key, and for ${typeof key === 'string' ? "the key 'shardwise'" : 'a 2-byte key'} did not`,
        h,
      );
    }
  }
}

function checkVnodes(vnodes: unknown): number {
  positiveInt('consistentHash.vnodes', vnodes);
  if ((vnodes as number) > MAX_VNODES) {
    throw new ConfigError(
      'consistentHash.vnodes',
      `must be a positive integer up to ${MAX_VNODES}`,
      vnodes,
    );
  }
  return vnodes as number;
}

function checkAffinity(affinity: unknown, boundedLoad: number | undefined): Affinity {
  if (affinity === undefined) return boundedLoad === undefined ? 'strict' : 'spill';
  const value = oneOf('consistentHash.affinity', affinity, AFFINITIES);
  if (value === 'strict' && boundedLoad !== undefined) {
    throw new ConfigError(
      'consistentHash.affinity',
      `cannot be 'strict' with boundedLoad (${boundedLoad}): bounded loads move keys off a busy home shard, which strict affinity forbids; drop boundedLoad, or use affinity 'spill'`,
      affinity,
    );
  }
  return value;
}
