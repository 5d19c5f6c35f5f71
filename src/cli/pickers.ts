import { consistentHash } from '../pickers/hashing/index.js';
import { leastInFlight } from '../pickers/least-in-flight.js';
import { p2c } from '../pickers/p2c.js';
import { peakEwma } from '../pickers/peak-ewma.js';
import { random } from '../pickers/random.js';
import { roundRobin } from '../pickers/round-robin.js';
import { weightedRoundRobin } from '../pickers/weighted-round-robin.js';
import type { Picker } from '../types.js';
import { UsageError } from './args.js';

/** The pickers the command line knows by name. */
export const PICKERS: Record<string, () => Picker> = {
  'round-robin': roundRobin,
  'weighted-round-robin': weightedRoundRobin,
  random,
  p2c: () => p2c(),
  'p2c-ewma': () => p2c({ load: 'ewma' }),
  'least-in-flight': leastInFlight,
  'peak-ewma': () => peakEwma(),
  ring: () => consistentHash({ algorithm: 'ring' }),
  maglev: () => consistentHash({ algorithm: 'maglev' }),
  rendezvous: () => consistentHash({ algorithm: 'rendezvous' }),
};

export function pickerFactory(name: string): () => Picker {
  const factory = PICKERS[name];
  if (factory === undefined) {
    throw new UsageError(`unknown picker "${name}" (known: ${Object.keys(PICKERS).join(', ')})`);
  }
  return factory;
}
