import { ConfigError } from '../errors.js';
import type { Picker, ShardState } from '../types.js';
import { checkKnownKeys, checkObject, oneOf } from '../validate.js';

/** Options of {@link p2c}. */
export interface P2COptions {
  /**
   * What "less loaded" means: `'inFlight'` (calls outstanding, default) or `'ewma'` (Peak-EWMA
   * cost: latency estimate × (in-flight + 1)) or `'bytes'` (bytes outstanding, for runs that
   * declare `bytes`: uploads that differ in size by orders of magnitude). Each is divided by the
   * shard's weight.
   */
  load?: 'inFlight' | 'ewma' | 'bytes';
}

/** (in-flight + 1) ÷ weight; the +1 lets weights separate two idle shards. */
export function inFlightLoad(shard: ShardState): number {
  return (shard.load + 1) / shard.weight;
}

/** (bytes in flight + 1) ÷ weight, plus the push-back penalty. */
export function bytesLoad(shard: ShardState): number {
  return (shard.bytesInFlight + 1 + (shard.load - shard.inFlight)) / shard.weight;
}

/** Peak-EWMA cost ÷ weight. */
export function ewmaLoad(shard: ShardState): number {
  return shard.cost / shard.weight;
}

/**
 * Power of two choices (Mitzenmacher): sample two distinct shards uniformly, keep the less loaded
 * (ties to the first). Max load falls from ~ln n / ln ln n (random) to ~ln ln n / ln 2, at O(1)
 * per pick whatever the shard count. The second index uses the "hole" trick (Finagle's P2C):
 * draw from n − 1 and step over the first, so the pair is distinct without a retry loop.
 *
 * @example
 * new Balancer({ shards, picker: p2c({ load: 'inFlight' }) });
 */
export function p2c(options: P2COptions = {}): Picker {
  checkObject('p2c options', options);
  checkKnownKeys('p2c', options, ['load']);
  const mode =
    options.load === undefined
      ? 'inFlight'
      : oneOf('p2c.load', options.load, ['inFlight', 'ewma', 'bytes']);
  if (mode === 'ewma') return twoChoices('p2c:ewma', ewmaLoad);
  if (mode === 'bytes') return twoChoices('p2c:bytes', bytesLoad);
  return twoChoices('p2c', inFlightLoad);
}

/** The P2C pick over any load function (shared by `p2c` and `peakEwma`). */
export function twoChoices(name: string, loadOf: (shard: ShardState) => number): Picker {
  if (typeof loadOf !== 'function') throw new ConfigError('load', 'must be a function', loadOf);
  return {
    name,
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const i = (request.random() * n) | 0;
      let j = (request.random() * (n - 1)) | 0;
      if (j >= i) j++;
      const a = shards[i]!;
      const b = shards[j]!;
      return loadOf(b) < loadOf(a) ? b : a;
    },
  };
}
