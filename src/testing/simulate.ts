/**
 * A discrete-event simulator on virtual time that drives the real `Balancer` (Finagle keeps a
 * small one in its test suite for the same reason): simulated shards with latency distributions,
 * capacity and FIFO queues, failures and schedules, and a seeded open- or closed-loop load.
 */
import { Balancer, type RunContext } from '../balancer.js';
import { ConfigError } from '../errors.js';
import type { BalancerOptions } from '../options.js';
import { createRandom } from '../random.js';
import type { Picker, RandomSource, ShardState } from '../types.js';
import { checkKnownKeys, checkObject, inRange, oneOf, positiveFinite } from '../validate.js';
import { constant, type Distribution, isDistribution } from './distributions.js';
import { ManualClock } from './manual-clock.js';
import { streamSeed } from './streams.js';

/** A change to a simulated shard at virtual time `atMs`; absent fields stay as they were. */
export interface ShardChange {
  /** Virtual time of the change, ms from the start of the run. */
  atMs: number;
  /** New service-time distribution (a number is `constant(ms)`); applies to services that start later. */
  latency?: Distribution | number;
  /** New probability in [0, 1] that a service ends in an error. */
  failureRate?: number;
  /** New number of requests served at once (`Infinity` for unbounded). */
  capacity?: number;
  /**
   * `true`: the shard is down. New calls fail at once with `code: 'ECONNREFUSED'`, and the calls
   * it holds (in service or waiting) fail at once with `code: 'ECONNRESET'`. `false`: it is up.
   */
  down?: boolean;
}

/** A simulated shard. */
export interface SimShardSpec {
  id: string;
  /** Weight given to the balancer (default 1). */
  weight?: number;
  zone?: string;
  labels?: Record<string, string>;
  /** Service time per request, sampled when service starts (a number is `constant(ms)`). */
  latency: Distribution | number;
  /** Probability in [0, 1] that a service ends in an error after its service time (default 0). */
  failureRate?: number;
  /**
   * Requests served at once (default unbounded). The rest wait in the shard's FIFO queue, and the
   * wait counts in the latency the balancer measures.
   */
  capacity?: number;
  /** Changes applied at virtual times. */
  schedule?: ShardChange[];
}

/** Requests arriving on their own, whatever the balancer's state (open loop). */
export interface Arrivals {
  /** Mean requests per virtual second; inter-arrival times are exponential (a Poisson process). */
  rate: number;
}

/** The routing keys runs carry (for hashing pickers): `key-0` … `key-(count−1)`. */
export interface KeySpec {
  /** How many distinct keys. */
  count: number;
  /** `'uniform'` (default) or `'zipf'` (key k drawn with weight 1 / (k+1)^s: a few hot keys). */
  distribution?: 'uniform' | 'zipf';
  /** Zipf exponent (default 1). */
  s?: number;
}

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
  /** Runs in all. */
  requests: number;
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

/** Latency figures over runs, admission to settlement, virtual ms. */
export interface LatencySummary {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  /** The latency distribution at 200 evenly spaced quantiles (for CDF plots): `ms[i]` at `q[i]`. */
  cdf: { q: number[]; ms: number[] };
}

/** One shard's figures. */
export interface ShardResult {
  id: string;
  /** Attempts the balancer started on it (`stats().shards[i].requests`). */
  requests: number;
  /** Attempts that failed on it, as the balancer counts them (timeouts included). */
  failures: number;
  /** p99 of its attempts, from the call to the shard's answer (queue wait included), virtual ms. */
  p99: number;
  /** Highest in-flight count the balancer had on it (seen at each call). */
  maxInFlight: number;
}

/** What {@link simulate} resolves. */
export interface SimulationResult {
  latency: LatencySummary;
  perShard: ShardResult[];
  /** max / mean of `perShard[].requests` (1 is perfect balance). */
  imbalance: number;
  /** Runs that rejected. */
  failures: number;
  /** Retry attempts started (`stats().retries`). */
  retries: number;
  /** In-flight count per shard (the balancer's view) sampled every `sampleEveryMs`. */
  series: { t: number[]; inFlight: Record<string, number[]> };
  /** Virtual time from the start to the last run's settlement, ms. */
  durationMs: number;
}

const MAX_POINTS = 10_000;
const DEFAULT_CONCURRENCY = 64;
const DEFAULT_SAMPLE_MS = 100;
const OPTION_KEYS = [
  'picker',
  'balancerOptions',
  'shards',
  'arrivals',
  'concurrency',
  'requests',
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

/** One call to a simulated shard. */
interface Job {
  calledMs: number;
  resolve: (value: undefined) => void;
  reject: (error: Error) => void;
  signal: AbortSignal;
  /** 0 waiting, 1 in service, 2 answered (or dropped). */
  phase: 0 | 1 | 2;
  fail: boolean;
  cancel: (() => void) | undefined;
}

/** A simulated server: `capacity` services at once, a FIFO queue for the rest. */
class SimShard {
  latency: Distribution;
  failureRate: number;
  capacity: number;
  down = false;
  busy = 0;
  maxInFlight = 0;
  readonly latencies: number[] = [];
  readonly inService = new Set<Job>();
  queue: Job[] = [];
  head = 0;
  /** Set when a latency distribution returned something that is not a duration. */
  fatal: Error | undefined = undefined;

  constructor(
    readonly id: string,
    spec: SimShardSpec,
    readonly clock: ManualClock,
    readonly latencyRandom: RandomSource,
    readonly failureRandom: RandomSource,
  ) {
    this.latency = toDistribution(spec.latency);
    this.failureRate = spec.failureRate ?? 0;
    this.capacity = spec.capacity ?? Number.POSITIVE_INFINITY;
  }

  call(state: ShardState, ctx: RunContext): Promise<undefined> {
    // The balancer counts the call before making it, so this is the in-flight count with it.
    if (state.inFlight > this.maxInFlight) this.maxInFlight = state.inFlight;
    if (this.down) {
      this.latencies.push(0);
      return Promise.reject(
        netError(`shard "${this.id}" refused the connection (down)`, 'ECONNREFUSED'),
      );
    }
    return new Promise<undefined>((resolve, reject) => {
      const job: Job = {
        calledMs: this.clock.now(),
        resolve,
        reject,
        signal: ctx.signal,
        phase: 0,
        fail: false,
        cancel: undefined,
      };
      if (this.busy < this.capacity) {
        this.start(job);
        return;
      }
      this.queue.push(job);
      // A request still waiting for service is dropped when the client gives up on it (timeout,
      // close); one in service runs to its end, as a server that does not notice.
      ctx.signal.addEventListener('abort', () => this.drop(job), { once: true });
    });
  }

  private start(job: Job): void {
    job.phase = 1;
    this.busy++;
    this.inService.add(job);
    let ms = this.latency.sample(this.latencyRandom);
    if (!(ms >= 0 && ms < Number.POSITIVE_INFINITY)) {
      this.fatal ??= new Error(
        `simulate: latency distribution ${this.latency.name} of shard "${this.id}" returned ${ms}, not a finite number of ms ≥ 0`,
      );
      ms = 0;
    }
    // Drawn on every service so the failure stream's position does not depend on the rate.
    job.fail = this.failureRandom() < this.failureRate;
    job.cancel = this.clock.setTimer(() => this.finish(job), ms);
  }

  private finish(job: Job): void {
    this.busy--;
    this.inService.delete(job);
    this.answer(job, job.fail ? new Error(`simulated failure on shard "${this.id}"`) : undefined);
    this.startWaiting();
  }

  private answer(job: Job, error: Error | undefined): void {
    job.phase = 2;
    this.latencies.push(this.clock.now() - job.calledMs);
    if (error === undefined) job.resolve(undefined);
    else job.reject(error);
  }

  private drop(job: Job): void {
    if (job.phase !== 0) return;
    job.phase = 2;
    job.reject(job.signal.reason as Error);
  }

  private startWaiting(): void {
    while (this.busy < this.capacity && this.head < this.queue.length) {
      const job = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as Job;
      if (job.phase === 0) this.start(job);
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  apply(change: ShardChange): void {
    if (change.latency !== undefined) this.latency = toDistribution(change.latency);
    if (change.failureRate !== undefined) this.failureRate = change.failureRate;
    if (change.capacity !== undefined) this.capacity = change.capacity;
    if (change.down === true && !this.down) {
      this.down = true;
      for (const job of this.inService) {
        job.cancel?.();
        this.answer(job, netError(`shard "${this.id}" went down`, 'ECONNRESET'));
      }
      this.inService.clear();
      this.busy = 0;
      for (let i = this.head; i < this.queue.length; i++) {
        const job = this.queue[i]!;
        if (job.phase === 0)
          this.answer(job, netError(`shard "${this.id}" went down`, 'ECONNRESET'));
      }
      this.queue = [];
      this.head = 0;
    } else if (change.down === false) {
      this.down = false;
    }
    this.startWaiting();
  }
}

function netError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

function toDistribution(value: Distribution | number): Distribution {
  return typeof value === 'number' ? constant(value) : value;
}

/**
 * Runs `requests` runs through a real `Balancer` against simulated shards on a `ManualClock`,
 * and resolves latency percentiles, per-shard counts, imbalance and an in-flight time series.
 * Every run is idempotent, so failed attempts are retried per `balancerOptions.retry`. The same
 * options and seed give a deep-equal result; each random stream (balancer, arrivals, keys, each
 * shard's latency and failures) has its own seed, so changing one leaves the others in place.
 *
 * @example
 * const result = await simulate({
 *   picker: p2c(),
 *   shards: [{ id: 'a', latency: exponential(10) }, { id: 'slow', latency: exponential(100), capacity: 8 }],
 *   arrivals: { rate: 500 },
 *   requests: 10_000,
 *   seed: 1,
 * });
 * console.log(result.latency.p99, result.imbalance);
 */
export async function simulate(options: SimulateOptions): Promise<SimulationResult> {
  const o = checkOptions(options);
  const clock = new ManualClock();
  const seed = o.seed;
  const sims = o.shards.map(
    (spec) =>
      new SimShard(
        spec.id,
        spec,
        clock,
        createRandom(streamSeed(seed, `latency:${spec.id}`)),
        createRandom(streamSeed(seed, `failure:${spec.id}`)),
      ),
  );
  const balancer = new Balancer<SimShard>({
    ...o.balancerOptions,
    picker: o.picker,
    shards: o.shards.map((spec, i) => {
      const shard: {
        id: string;
        target: SimShard;
        weight?: number;
        zone?: string;
        labels?: Record<string, string>;
      } = {
        id: spec.id,
        target: sims[i]!,
      };
      if (spec.weight !== undefined) shard.weight = spec.weight;
      if (spec.zone !== undefined) shard.zone = spec.zone;
      if (spec.labels !== undefined) shard.labels = spec.labels;
      return shard;
    }),
    clock,
    random: createRandom(streamSeed(seed, 'balancer')),
  });
  o.shards.forEach((spec, i) => {
    const sim = sims[i]!;
    for (const change of spec.schedule ?? []) {
      // A change at 0 is the shard's state from the start, before the first call.
      if (change.atMs === 0) sim.apply(change);
      else clock.setTimer(() => sim.apply(change), change.atMs);
    }
  });

  const requests = o.requests;
  const latencies = new Float64Array(requests);
  const nextKey = keyGenerator(o.keys, createRandom(streamSeed(seed, 'keys')));
  const plain = { idempotent: true };
  const call = (shard: ShardState<SimShard>, ctx: RunContext) => shard.target.call(shard, ctx);
  let issued = 0;
  let settled = 0;
  let failed = 0;
  const closedLoop = o.arrivals === undefined;

  const issue = (): void => {
    issued++;
    const admittedMs = clock.now();
    const done = (): void => {
      latencies[settled++] = clock.now() - admittedMs;
      if (closedLoop && issued < requests) issue();
    };
    const key = nextKey?.();
    balancer.run(call, key === undefined ? plain : { idempotent: true, key }).then(done, () => {
      failed++;
      done();
    });
  };

  if (o.arrivals === undefined) {
    const callers = Math.min(o.concurrency, requests);
    for (let i = 0; i < callers; i++) issue();
  } else {
    const arrivalRandom = createRandom(streamSeed(seed, 'arrivals'));
    const meanGapMs = 1000 / o.arrivals.rate;
    let nextAt = 0;
    const gap = () => -meanGapMs * Math.log(1 - arrivalRandom());
    const arrive = (): void => {
      issue();
      if (issued < requests) {
        nextAt += gap();
        clock.setTimer(arrive, nextAt - clock.now());
      }
    };
    nextAt = gap();
    clock.setTimer(arrive, nextAt);
  }

  // Series: the state is constant between events, so a point at time s is read just before the
  // clock moves past s.
  const live = balancer.shards;
  const t: number[] = [];
  const columns: number[][] = sims.map(() => []);
  let interval = o.sampleEveryMs;
  let nextSample = 0;
  const sampleBefore = (limitMs: number, inclusive: boolean): void => {
    while (nextSample < limitMs || (inclusive && nextSample === limitMs)) {
      t.push(nextSample);
      for (let i = 0; i < columns.length; i++) columns[i]!.push(live[i]!.inFlight);
      if (t.length > MAX_POINTS) {
        compact(t);
        for (const column of columns) compact(column);
        interval *= 2;
        nextSample = t[t.length - 1]! + interval;
      } else {
        nextSample += interval;
      }
    }
  };

  // The event loop: let every promise reaction at this instant run (one macrotask turn drains the
  // whole microtask queue, however deep the chains), then fire every timer due at the next instant.
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const sim of sims) if (sim.fatal !== undefined) throw sim.fatal;
    if (settled >= requests) break;
    const next = clock.nextTimerAt();
    if (next === undefined) {
      throw new Error(
        `simulate: stalled at ${clock.now()} ms with ${requests - settled} run(s) unsettled and no timer pending`,
      );
    }
    sampleBefore(next, false);
    clock.advanceTo(next);
  }
  const durationMs = clock.now();
  sampleBefore(durationMs, true);

  const stats = balancer.stats();
  const perShard = sims.map((sim, i): ShardResult => {
    const s = stats.shards[i]!;
    const own = Float64Array.from(sim.latencies).sort();
    return {
      id: sim.id,
      requests: s.requests,
      failures: s.failures,
      p99: quantile(own, 0.99),
      maxInFlight: sim.maxInFlight,
    };
  });
  latencies.sort();
  let sum = 0;
  for (let i = 0; i < latencies.length; i++) sum += latencies[i]!;
  let max = 0;
  let total = 0;
  for (const shard of perShard) {
    total += shard.requests;
    if (shard.requests > max) max = shard.requests;
  }
  const meanRequests = total / perShard.length;
  const inFlight: Record<string, number[]> = {};
  sims.forEach((sim, i) => {
    inFlight[sim.id] = columns[i]!;
  });
  return {
    latency: {
      mean: sum / requests,
      p50: quantile(latencies, 0.5),
      p90: quantile(latencies, 0.9),
      p99: quantile(latencies, 0.99),
      p999: quantile(latencies, 0.999),
      cdf: cdfOf(latencies),
    },
    perShard,
    imbalance: meanRequests > 0 ? max / meanRequests : 0,
    failures: failed,
    retries: stats.retries,
    series: { t, inFlight },
    durationMs,
  };
}

function cdfOf(sorted: Float64Array): { q: number[]; ms: number[] } {
  const q: number[] = [];
  const ms: number[] = [];
  for (let i = 1; i <= 200; i++) {
    q.push(i / 200);
    ms.push(quantile(sorted, i / 200));
  }
  return { q, ms };
}

/** Nearest-rank quantile of sorted values (0 for none). */
function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1]!;
}

/** Keeps the points at even indices. */
function compact(values: number[]): void {
  let j = 0;
  for (let i = 0; i < values.length; i += 2) values[j++] = values[i]!;
  values.length = j;
}

function keyGenerator(spec: KeySpec | undefined, random: RandomSource): (() => string) | undefined {
  if (spec === undefined) return undefined;
  const count = spec.count;
  const names: string[] = [];
  const name = (k: number): string => {
    let key = names[k];
    if (key === undefined) {
      key = `key-${k}`;
      names[k] = key;
    }
    return key;
  };
  if ((spec.distribution ?? 'uniform') === 'uniform') return () => name((random() * count) | 0);
  const s = spec.s ?? 1;
  const cdf = new Float64Array(count);
  let acc = 0;
  for (let k = 0; k < count; k++) {
    acc += 1 / (k + 1) ** s;
    cdf[k] = acc;
  }
  return () => {
    const point = random() * acc;
    let lo = 0;
    let hi = count - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! > point) hi = mid;
      else lo = mid + 1;
    }
    return name(lo);
  };
}

interface CheckedOptions {
  picker: Picker | undefined;
  balancerOptions: Omit<BalancerOptions, 'shards' | 'clock' | 'random'>;
  shards: SimShardSpec[];
  arrivals: Arrivals | undefined;
  concurrency: number;
  requests: number;
  keys: KeySpec | undefined;
  seed: number;
  sampleEveryMs: number;
}

function checkOptions(options: SimulateOptions): CheckedOptions {
  checkObject('simulate options', options);
  checkKnownKeys('', options, OPTION_KEYS);
  const balancerOptions = { ...(options.balancerOptions ?? {}) };
  checkObject('balancerOptions', balancerOptions);
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
      if (!Array.isArray(spec.schedule)) {
        throw new ConfigError(`${field}.schedule`, 'must be an array of changes', spec.schedule);
      }
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
  const requests = count('requests', options.requests);
  let keys: KeySpec | undefined;
  if (options.keys !== undefined) {
    checkObject('keys', options.keys);
    checkKnownKeys('keys', options.keys, ['count', 'distribution', 's']);
    keys = { count: count('keys.count', options.keys.count) };
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

function count(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new ConfigError(field, 'must be a positive integer', value);
  }
  return value;
}
