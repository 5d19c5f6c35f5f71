import { ConfigError } from '../base/errors.js';
import type { Picker, ShardState } from '../base/types.js';
import { checkKnownKeys, checkObject, oneOf } from '../base/validate.js';
import { dChoices } from './d-choices.js';

/** Options of {@link p2c}. */
export interface P2COptions {
  /**
   * What "less loaded" means: `'inFlight'` (calls outstanding, default) or `'ewma'` (Peak-EWMA
   * cost: latency estimate × (in-flight + 1)) or `'bytes'` (bytes outstanding, for runs that
   * declare `bytes`: uploads that differ in size by orders of magnitude). Each is divided by the
   * shard's weight.
   */
  load?: 'inFlight' | 'ewma' | 'bytes';
  /**
   * Shards sampled per pick, the paper's d: an integer from 2 (default) to {@link MAX_CHOICES}.
   * More choices spread load more evenly (max load ~ ln ln n / ln d) at one more random draw and
   * load read each. With fewer candidates than `choices`, all of them are compared.
   */
  choices?: number;
}

/**
 * The largest `choices`: at d = 16, ln ln n / ln d is under 1 for any n below 8 million, so more
 * buys nothing measurable, and a pick costs O(d²). For "always the least loaded", use
 * `leastInFlight()`.
 */
export const MAX_CHOICES = 16;

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
 * `choices: d` samples d distinct shards instead (see `dChoices`); d = 2 gives the same picks as
 * the two-choice pick, draw for draw.
 *
 * @example
 * new Balancer({ shards, picker: p2c({ load: 'inFlight' }) });
 * new Balancer({ shards, picker: p2c({ choices: 3 }) }); // the supermarket model's d = 3
 */
export function p2c(options: P2COptions = {}): Picker {
  checkObject('p2c options', options);
  checkKnownKeys('p2c', options, ['load', 'choices']);
  const mode =
    options.load === undefined
      ? 'inFlight'
      : oneOf('p2c.load', options.load, ['inFlight', 'ewma', 'bytes']);
  const d = options.choices === undefined ? 2 : checkChoices(options.choices);
  const loadOf = mode === 'ewma' ? ewmaLoad : mode === 'bytes' ? bytesLoad : inFlightLoad;
  const name = mode === 'inFlight' ? 'p2c' : `p2c:${mode}`;
  if (d > 2) return dChoices(`${name}:d${d}`, d, loadOf);
  return mode === 'inFlight' ? twoChoicesInFlight() : twoChoices(name, loadOf);
}

function checkChoices(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 2 || value > MAX_CHOICES) {
    throw new ConfigError('p2c.choices', `must be an integer from 2 to ${MAX_CHOICES}`, value);
  }
  return value;
}

/**
 * The P2C pick over any load function (shared by `p2c` and `peakEwma`). The load is read at one
 * site, in a loop over the pair (second drawn first, so the first wins ties): V8 inlines a load
 * getter once rather than twice, and the Peak-EWMA cost then returns unboxed (no allocation).
 */
export function twoChoices(name: string, loadOf: (shard: ShardState) => number): Picker {
  if (typeof loadOf !== 'function') throw new ConfigError('load', 'must be a function', loadOf);
  return {
    name,
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const random = request.random;
      const i = (random() * n) | 0;
      let j = (random() * (n - 1)) | 0;
      // The hole, without a branch: +1 when j ≥ i (the sign bit of i − j − 1). A branch taken
      // half the time at random is mispredicted half the time: ~7 ns a pick, measured.
      j += (i - j - 1) >>> 31;
      let best = j;
      let bestLoad = 0;
      for (let k = 0, at = j; k < 2; k++, at = i) {
        const load = loadOf(shards[at]!);
        if (k === 0 || load <= bestLoad) {
          best = at;
          bestLoad = load;
        }
      }
      return shards[best];
    },
  };
}

/**
 * The default pick, `(in-flight + 1) ÷ weight`, written out: no load-function call, no division
 * when the two weights are equal (x ÷ w < y ÷ w ⇔ x < y, and exactly so for w = 1), and the winner
 * chosen by index arithmetic rather than a branch the CPU would mispredict half the time.
 * Measured in bench/pickers.bench.ts.
 */
function twoChoicesInFlight(): Picker {
  return {
    name: 'p2c',
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const random = request.random;
      const i = (random() * n) | 0;
      let j = (random() * (n - 1)) | 0;
      j += (i - j - 1) >>> 31;
      const a = shards[i]!;
      const b = shards[j]!;
      const wa = a.weight;
      const wb = b.weight;
      // b's load is read first, as `twoChoices` does.
      const lb = b.load + 1;
      const less = wa === wb ? lb < a.load + 1 : lb / wb < (a.load + 1) / wa;
      // i when b is not strictly less loaded (ties to the first drawn), else j.
      return shards[i + ((j - i) & -+less)];
    },
  };
}
