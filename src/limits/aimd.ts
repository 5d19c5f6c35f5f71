import { ConfigError } from '../base/errors.js';
import { checkKnownKeys, checkObject, duration, inRange, positiveInt } from '../base/validate.js';
import type { ConcurrencyLimit, LimitFactory, LimitSample } from './types.js';

/** Options of {@link aimd}. */
export interface AimdOptions {
  /** Starting limit (default 10). */
  initial?: number;
  /** Floor (default 1). */
  min?: number;
  /** Ceiling (default 200). */
  max?: number;
  /** Multiplier applied on a drop (default 0.9), in (0, 1). */
  backoffRatio?: number;
  /** A sample slower than this counts as a drop, ms (default 5 000). */
  timeoutMs?: number;
}

export const AIMD_DEFAULTS: Required<AimdOptions> = {
  initial: 10,
  min: 1,
  max: 200,
  backoffRatio: 0.9,
  timeoutMs: 5_000,
};

/**
 * Loss-based limit, additive increase / multiplicative decrease (TCP Reno; Netflix
 * concurrency-limits `AIMDLimit`): +1 after a success while the limit is in use (in-flight ≥ half
 * of it), × `backoffRatio` after a drop (timeout, push-back, failure). Defaults follow Netflix's
 * except `initial` 10 and `min` 1, since one shard of a fleet may serve only a few calls at once.
 */
export class AimdLimit implements ConcurrencyLimit {
  private value: number;
  private readonly o: Required<AimdOptions>;

  constructor(options: Required<AimdOptions>) {
    this.o = options;
    this.value = options.initial;
  }

  get limit(): number {
    return Math.floor(this.value);
  }

  onSample({ rttMs, inFlight, dropped }: LimitSample): void {
    if (dropped || rttMs > this.o.timeoutMs) {
      this.value = Math.max(this.o.min, this.value * this.o.backoffRatio);
    } else if (inFlight * 2 >= this.limit) {
      this.value = Math.min(this.o.max, this.value + 1);
    }
  }
}

/**
 * A factory of {@link AimdLimit}s, one per shard.
 *
 * @example
 * new Balancer({ shards, maxInFlightPerShard: aimd({ initial: 8, max: 64 }) });
 */
export function aimd(options: AimdOptions = {}): LimitFactory {
  checkObject('aimd options', options);
  checkKnownKeys('aimd', options, Object.keys(AIMD_DEFAULTS));
  const o = { ...AIMD_DEFAULTS };
  if (options.initial !== undefined) o.initial = positiveInt('aimd.initial', options.initial);
  if (options.min !== undefined) o.min = positiveInt('aimd.min', options.min);
  if (options.max !== undefined) o.max = positiveInt('aimd.max', options.max);
  if (options.backoffRatio !== undefined) {
    o.backoffRatio = inRange('aimd.backoffRatio', options.backoffRatio, 0.01, 0.99);
  }
  if (options.timeoutMs !== undefined)
    o.timeoutMs = duration('aimd.timeoutMs', options.timeoutMs, true);
  // A default `initial` follows the bounds given (`{ min: 20 }` starts at 20), as gradient's does.
  if (options.initial === undefined) o.initial = Math.min(Math.max(o.initial, o.min), o.max);
  checkBounds('aimd', o.initial, o.min, o.max);
  return () => new AimdLimit(o);
}

export function checkBounds(name: string, initial: number, min: number, max: number): void {
  if (min > max) throw new ConfigError(`${name}.min`, `must be ≤ ${name}.max (${max})`, min);
  if (initial < min || initial > max) {
    throw new ConfigError(
      `${name}.initial`,
      `must be between ${name}.min (${min}) and ${name}.max (${max})`,
      initial,
    );
  }
}
