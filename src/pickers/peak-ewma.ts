import type { EwmaOptions, Picker } from '../base/types.js';
import { checkKnownKeys, checkObject, duration } from '../base/validate.js';
import { ewmaLoad, twoChoices } from './p2c.js';

/** Options of {@link peakEwma}. */
export interface PeakEwmaOptions extends EwmaOptions {}

/**
 * Peak EWMA (Finagle, Linkerd, tower): P2C on cost = latency estimate × (in-flight + 1). The
 * estimate jumps to a slower sample at once and decays back over `decayMs` (default 10 000), so
 * a shard that turns slow loses traffic within one request; a shard with no sample yet costs
 * `defaultRttMs` (default 30). The balancer's default picker.
 *
 * @example
 * new Balancer({ shards, picker: peakEwma({ decayMs: 5_000 }) });
 */
export function peakEwma(options: PeakEwmaOptions = {}): Picker {
  checkObject('peakEwma options', options);
  checkKnownKeys('peakEwma', options, ['decayMs', 'defaultRttMs']);
  const ewma: EwmaOptions = {};
  if (options.decayMs !== undefined)
    ewma.decayMs = duration('peakEwma.decayMs', options.decayMs, true);
  if (options.defaultRttMs !== undefined) {
    ewma.defaultRttMs = duration('peakEwma.defaultRttMs', options.defaultRttMs);
  }
  return { ...twoChoices('peak-ewma', ewmaLoad), ewma };
}
