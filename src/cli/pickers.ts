/**
 * The pickers the command line offers: every built-in one but `weightedByLoadReport()` (no
 * simulated or demo shard reports its load), each known by its own `name` (the name it reports in
 * stats and events), so what the CLI prints is what it accepts.
 */

import type { Picker } from '../base/types.js';
import { consistentHash } from '../pickers/hashing/index.js';
import { leastInFlight } from '../pickers/least-in-flight.js';
import { p2c } from '../pickers/p2c.js';
import { peakEwma } from '../pickers/peak-ewma.js';
import { random } from '../pickers/random.js';
import { roundRobin } from '../pickers/round-robin.js';
import { weightedRoundRobin } from '../pickers/weighted-round-robin.js';
import { UsageError } from './args.js';

const FACTORIES: readonly (() => Picker)[] = [
  roundRobin,
  weightedRoundRobin,
  random,
  () => p2c(),
  () => p2c({ load: 'ewma' }),
  () => p2c({ load: 'bytes' }),
  leastInFlight,
  () => peakEwma(),
  () => consistentHash({ algorithm: 'ring' }),
  () => consistentHash({ algorithm: 'maglev' }),
  () => consistentHash({ algorithm: 'rendezvous' }),
  () => consistentHash({ algorithm: 'jump' }),
];

/** The pickers the command line knows, by their own `name`, in the order help lists them. */
export const PICKERS: Readonly<Record<string, () => Picker>> = Object.freeze(
  Object.fromEntries(FACTORIES.map((factory) => [factory().name, factory])),
);

export function pickerFactory(name: string): () => Picker {
  const factory = PICKERS[name];
  if (factory === undefined) {
    throw new UsageError(`unknown picker "${name}" (known: ${Object.keys(PICKERS).join(', ')})`);
  }
  return factory;
}

/** The picker names, comma separated, wrapped to 78 columns with `indent` before each line. */
export function pickerList(indent: string): string {
  const lines: string[] = [];
  let line = indent;
  for (const [i, name] of Object.keys(PICKERS).entries()) {
    const word = i === Object.keys(PICKERS).length - 1 ? name : `${name},`;
    if (line.length > indent.length && line.length + 1 + word.length > 78) {
      lines.push(line);
      line = indent;
    }
    line += line.length > indent.length ? ` ${word}` : word;
  }
  lines.push(line);
  return lines.join('\n');
}
