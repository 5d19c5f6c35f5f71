/**
 * The options of `simulate()`: their documentation, their defaults, and the checks that turn a bad
 * one into a `ConfigError` naming the field, before anything runs.
 */
import { ConfigError } from '../base/errors.js';
import type { Picker } from '../base/types.js';
import {
  checkKnownKeys,
  checkObject,
  checkPlainObject,
  denseArray,
  duration,
  inRange,
  nonNegativeInt,
  oneOf,
  positiveFinite,
} from '../base/validate.js';
import type { BalancerOptions } from '../core/options.js';
import { isDistribution } from './distributions.js';
import type { ShardChange, SimShardSpec } from './sim-shard.js';
import type { Arrivals, KeySpec } from './workload.js';

/** Options of {@link simulate}. */
export interface SimulateOptions {
  /** The picker; shorthand for `balancerOptions.picker`. A factory gets a fresh picker per run. */
  picker?: Picker | (() => Picker);
  /**
   * Options of the real `Balancer` (timeouts, retries, health, limits, `maxInFlightPerShard`,
   * default 32). `shards`, `clock` and `random` belong to the simulator.
   */
  balancerOptions?: Omit<BalancerOptions, 'shards' | 'clock' | 'random'>;
  /** The simulated shards (at least one, ids unique). */
  shards: SimShardSpec[];
  /** Open loop: requests arrive at this rate. Absent: `concurrency` callers run closed-loop. */
  arrivals?: Arrivals;
  /** Closed loop: callers each waiting for their run to settle before the next (default 64). */
  concurrency?: number;
  /**
   * Runs measured: the results count these, and warm-up runs come on top of them. At most
   * 10 000 000: each keeps its latency.
   */
  requests: number;
  /**
   * Virtual ms of warm-up: runs admitted before this time are run but left out of the results
   * (latency, per-shard figures, failures, retries), so a fleet that starts empty is measured in
   * its steady state. Give `warmupMs` or `warmupRequests`, not both (default: no warm-up).
   */
  warmupMs?: number;
  /** Runs of warm-up: the first `warmupRequests` runs admitted are left out of the results. */
  warmupRequests?: number;
  /**
   * `'sorted'`: also return every measured run's latency, ascending, as `latency.sorted` (a
   * `Float64Array`, 8 bytes a run), for quantiles and means the summary does not give.
   */
  latencies?: 'sorted';
  /** Routing keys; required for keyed pickers. */
  keys?: KeySpec;
  /** Seed of every random stream (balancer, arrivals, keys, per-shard latency and failures). */
  seed: number;
  /**
   * Interval of `series`, virtual ms (default 100). At most 10 000 points are kept: past that the
   * interval doubles (every other point is dropped).
   */
  sampleEveryMs?: number;
}

const DEFAULT_CONCURRENCY = 64;
/**
 * The most measured runs one simulation takes: each keeps its latency (8 bytes), and each goes
 * through the real balancer, so 10 million is already 80 MB and minutes of CPU.
 */
export const MAX_SIMULATED_REQUESTS = 10_000_000;
/** The most distinct keys: a Zipf draw keeps a table of 8 bytes a key. */
export const MAX_SIMULATED_KEYS = 10_000_000;
const DEFAULT_SAMPLE_MS = 100;
const OPTION_KEYS = [
  'picker',
  'balancerOptions',
  'shards',
  'arrivals',
  'concurrency',
  'requests',
  'warmupMs',
  'warmupRequests',
  'latencies',
  'keys',
  'seed',
  'sampleEveryMs',
];
const SHARD_KEYS = [
  'id',
  'weight',
  'zone',
  'labels',
  'latency',
  'failureRate',
  'capacity',
  'schedule',
];
const CHANGE_KEYS = ['atMs', 'latency', 'failureRate', 'capacity', 'down'];

export interface CheckedOptions {
  picker: Picker | undefined;
  balancerOptions: Omit<BalancerOptions, 'shards' | 'clock' | 'random'>;
  shards: SimShardSpec[];
  arrivals: Arrivals | undefined;
  concurrency: number;
  requests: number;
  warmupMs: number;
  warmupRequests: number;
  keepSorted: boolean;
  keys: KeySpec | undefined;
  seed: number;
  sampleEveryMs: number;
}

export function checkOptions(options: SimulateOptions): CheckedOptions {
  checkObject('simulate options', options);
  checkKnownKeys('', options, OPTION_KEYS);
  if (options.balancerOptions !== undefined)
    checkPlainObject('balancerOptions', options.balancerOptions);
  const balancerOptions = { ...(options.balancerOptions ?? {}) };
  for (const owned of ['shards', 'clock', 'random']) {
    if ((balancerOptions as Record<string, unknown>)[owned] !== undefined) {
      throw new ConfigError(
        `balancerOptions.${owned}`,
        'belongs to the simulator: give `shards` at the top level; the clock and random source are seeded from `seed`',
        (balancerOptions as Record<string, unknown>)[owned],
      );
    }
  }
  if (options.picker !== undefined && balancerOptions.picker !== undefined) {
    throw new ConfigError(
      'picker',
      'is given twice (also as `balancerOptions.picker`)',
      options.picker,
    );
  }
  const given = options.picker ?? balancerOptions.picker;
  const picker = typeof given === 'function' ? (given as () => Picker)() : given;
  if (typeof given === 'function' && (typeof picker !== 'object' || picker === null)) {
    throw new ConfigError('picker', 'must return a Picker when it is a factory', picker);
  }
  delete balancerOptions.picker;

  if (!Array.isArray(options.shards) || options.shards.length === 0) {
    throw new ConfigError(
      'shards',
      'must be a non-empty array of simulated shards',
      options.shards,
    );
  }
  const ids = new Set<string>();
  options.shards.forEach((spec, i) => {
    const field = `shards[${i}]`;
    checkObject(field, spec);
    checkKnownKeys(field, spec, SHARD_KEYS);
    if (typeof spec.id !== 'string' || spec.id.length === 0) {
      throw new ConfigError(`${field}.id`, 'must be a non-empty string', spec.id);
    }
    if (ids.has(spec.id))
      throw new ConfigError(`${field}.id`, 'must be unique, and is used twice', spec.id);
    ids.add(spec.id);
    if (spec.latency === undefined)
      throw new ConfigError(`${field}.latency`, 'is required', undefined);
    checkChange(field, spec);
    if (spec.schedule !== undefined) {
      denseArray(`${field}.schedule`, spec.schedule, 'changes');
      spec.schedule.forEach((change, j) => {
        const at = `${field}.schedule[${j}]`;
        checkObject(at, change);
        checkKnownKeys(at, change, CHANGE_KEYS);
        if (typeof change.atMs !== 'number' || !Number.isFinite(change.atMs) || change.atMs < 0) {
          throw new ConfigError(`${at}.atMs`, 'must be a finite number of ms ≥ 0', change.atMs);
        }
        checkChange(at, change);
        if (change.down !== undefined && typeof change.down !== 'boolean') {
          throw new ConfigError(`${at}.down`, 'must be a boolean', change.down);
        }
      });
    }
  });

  let arrivals: Arrivals | undefined;
  if (options.arrivals !== undefined) {
    checkObject('arrivals', options.arrivals);
    checkKnownKeys('arrivals', options.arrivals, ['rate']);
    arrivals = { rate: positiveFinite('arrivals.rate', options.arrivals.rate) };
    if (options.concurrency !== undefined) {
      throw new ConfigError(
        'concurrency',
        'applies to the closed loop only: give `arrivals` or `concurrency`, not both',
        options.concurrency,
      );
    }
  }
  const concurrency =
    options.concurrency === undefined
      ? DEFAULT_CONCURRENCY
      : count('concurrency', options.concurrency);
  const requests = count('requests', options.requests, MAX_SIMULATED_REQUESTS);
  if (options.warmupMs !== undefined && options.warmupRequests !== undefined) {
    throw new ConfigError(
      'warmupRequests',
      'cannot be given with `warmupMs`: the warm-up ends at a time or after a number of runs, not both',
      options.warmupRequests,
    );
  }
  const warmupMs = options.warmupMs === undefined ? 0 : duration('warmupMs', options.warmupMs);
  const warmupRequests =
    options.warmupRequests === undefined
      ? 0
      : nonNegativeInt('warmupRequests', options.warmupRequests);
  if (options.latencies !== undefined) oneOf('latencies', options.latencies, ['sorted']);
  let keys: KeySpec | undefined;
  if (options.keys !== undefined) {
    checkObject('keys', options.keys);
    checkKnownKeys('keys', options.keys, ['count', 'distribution', 's']);
    keys = { count: count('keys.count', options.keys.count, MAX_SIMULATED_KEYS) };
    if (options.keys.distribution !== undefined) {
      keys.distribution = oneOf<'uniform' | 'zipf'>(
        'keys.distribution',
        options.keys.distribution,
        ['uniform', 'zipf'],
      );
    }
    if (options.keys.s !== undefined) keys.s = positiveFinite('keys.s', options.keys.s);
  } else if (picker?.keyed === true) {
    throw new ConfigError('keys', `is required: picker "${picker.name}" routes by key`, undefined);
  }
  if (typeof options.seed !== 'number' || !Number.isSafeInteger(options.seed)) {
    throw new ConfigError('seed', 'must be an integer', options.seed);
  }
  const sampleEveryMs =
    options.sampleEveryMs === undefined
      ? DEFAULT_SAMPLE_MS
      : positiveFinite('sampleEveryMs', options.sampleEveryMs);
  return {
    picker,
    balancerOptions,
    shards: options.shards,
    arrivals,
    concurrency,
    requests,
    warmupMs,
    warmupRequests,
    keepSorted: options.latencies === 'sorted',
    keys,
    seed: options.seed,
    sampleEveryMs,
  };
}

function checkChange(field: string, change: Omit<ShardChange, 'atMs'>): void {
  if (change.latency !== undefined) {
    const latency = change.latency;
    if (typeof latency === 'number') {
      if (!Number.isFinite(latency) || latency < 0) {
        throw new ConfigError(
          `${field}.latency`,
          'must be a Distribution or a finite number of ms ≥ 0',
          latency,
        );
      }
    } else if (!isDistribution(latency)) {
      throw new ConfigError(
        `${field}.latency`,
        'must be a Distribution or a finite number of ms ≥ 0',
        latency,
      );
    }
  }
  if (change.failureRate !== undefined) inRange(`${field}.failureRate`, change.failureRate, 0, 1);
  if (change.capacity !== undefined && change.capacity !== Number.POSITIVE_INFINITY) {
    count(`${field}.capacity`, change.capacity);
  }
}

function count(field: string, value: unknown, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    const expected =
      max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer from 1 to ${max}`;
    throw new ConfigError(field, `must be ${expected}`, value);
  }
  return value;
}
