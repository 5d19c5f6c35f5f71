/**
 * `shardwise simulate`: pickers side by side on simulated shards (virtual time, seeded), a table
 * on stdout, and an SVG (or HTML) report with a latency CDF per picker and each picker's
 * per-shard in-flight over time.
 */
import { accessSync, constants, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isShardwiseError } from '../base/errors.js';
import {
  constant,
  type Distribution,
  exponential,
  lognormal,
  pareto,
} from '../testing/distributions.js';
import type { SimShardSpec } from '../testing/sim-shard.js';
import { type SimulationResult, simulate } from '../testing/simulate.js';
import type { SimulateOptions } from '../testing/simulate-options.js';
import { parseFlags, UsageError } from './args.js';
import { pickerFactory, pickerList } from './pickers.js';
import { type ChartOptions, svgDocument } from './svg.js';
import { table } from './table.js';
import { wrap } from './wrap.js';

export const SIMULATE_HELP = `Usage: shardwise simulate [flags]

Runs each picker on the same simulated fleet (virtual time, seeded: the same
flags give the same numbers) through the real Balancer, prints a table, and
with --out writes plots.

  --picker LIST       pickers, comma separated
                      (default round-robin,p2c,peak-ewma)
  --shards N          shards (default 8, at most 10000)
  --latency MS        mean service time, exponential (default 10)
  --capacity N        requests a shard serves at once; the rest queue
                      (default 4)
  --slow N            how many shards are slow (default 1)
  --slow-factor X     how much slower (default 10)
  --load X            offered load as a fraction of the fleet's capacity
                      (default 0.6)
  --requests N        runs per picker (default 20000, at most 10000000)
  --seed N            seed (default 1)
  --scenario FILE     a JSON scenario instead of the fleet flags (see below);
                      --picker, --requests and --seed, when given, override
                      its own
  --out FILE          write a report: .svg, or .html (the SVG inside a page)
  --help              this text

Pickers:
${pickerList('  ')}

Scenario file:
  { "shards": [{ "id": "a", "latency": 10 | { "type": "exponential",
    "mean": 10 }, "capacity": 4, "weight": 1, "failureRate": 0,
    "schedule": [{ "atMs": 1000, "latency": 100 }] }],
    "arrivals": { "rate": 500 } | absent, "concurrency": 64,
    "requests": 20000, "seed": 1, "pickers": ["p2c"],
    "balancerOptions": { "timeoutMs": 1000 } }
Latency types: constant (ms), exponential (mean), lognormal (median, sigma),
pareto (scale, alpha).`;

const SCENARIO_KEYS = [
  'shards',
  'arrivals',
  'concurrency',
  'requests',
  'seed',
  'pickers',
  'balancerOptions',
];

/** The fleet flags, which a scenario file replaces. */
const FLEET_FLAGS = ['shards', 'latency', 'capacity', 'slow', 'slow-factor', 'load'];

interface Scenario {
  shards: SimShardSpec[];
  arrivals?: { rate: number };
  concurrency?: number;
  requests: number;
  seed: number;
  pickers?: string[];
  balancerOptions?: SimulateOptions['balancerOptions'];
}

function distribution(value: unknown, where: string): Distribution | number {
  if (typeof value === 'number') return value;
  if (typeof value !== 'object' || value === null) {
    throw new UsageError(`${where}: latency must be a number of ms or { type, … }`);
  }
  const v = value as Record<string, number>;
  switch ((value as { type?: unknown }).type) {
    case 'constant':
      return constant(v.ms ?? v.mean ?? Number.NaN);
    case 'exponential':
      return exponential(v.mean ?? Number.NaN);
    case 'lognormal':
      return lognormal(v.median ?? Number.NaN, v.sigma ?? Number.NaN);
    case 'pareto':
      return pareto(v.scale ?? Number.NaN, v.alpha ?? Number.NaN);
    default:
      throw new UsageError(
        `${where}: latency type must be constant, exponential, lognormal or pareto`,
      );
  }
}

function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read scenario "${file}": ${(error as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`scenario "${file}" is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || !Array.isArray((data as Scenario).shards)) {
    throw new UsageError(`scenario "${file}" must be an object with a "shards" array`);
  }
  const s = data as Scenario & { shards: (SimShardSpec & { latency: unknown })[] };
  // What this reads itself must be checked here: simulate() checks the rest, by field name.
  const where = `scenario "${file}"`;
  for (const key of Object.keys(s)) {
    if (!SCENARIO_KEYS.includes(key)) {
      throw new UsageError(`${where}: unknown field "${key}" (known: ${SCENARIO_KEYS.join(', ')})`);
    }
  }
  s.shards.forEach((shard, i) => {
    if (!isObject(shard)) throw new UsageError(`${where}: shards[${i}] must be an object`);
    const schedule = (shard as { schedule?: unknown }).schedule;
    if (Array.isArray(schedule)) {
      schedule.forEach((change, k) => {
        if (!isObject(change)) {
          throw new UsageError(`${where}: shards[${i}].schedule[${k}] must be an object`);
        }
      });
    }
  });
  const pickers = (s as { pickers?: unknown }).pickers;
  if (
    pickers !== undefined &&
    (!Array.isArray(pickers) || !pickers.every((name) => typeof name === 'string'))
  ) {
    throw new UsageError(`${where}: "pickers" must be an array of picker names`);
  }
  return {
    ...s,
    requests: s.requests ?? 20_000,
    seed: s.seed ?? 1,
    shards: s.shards.map((shard, i) => {
      const spec: SimShardSpec = {
        ...shard,
        latency: distribution(shard.latency, `scenario shards[${i}]`),
      };
      if (Array.isArray(shard.schedule)) {
        spec.schedule = shard.schedule.map((change, k) =>
          change.latency === undefined
            ? change
            : {
                ...change,
                latency: distribution(change.latency, `scenario shards[${i}].schedule[${k}]`),
              },
        );
      }
      return spec;
    }),
  };
}

function fleetFromFlags(flags: Record<string, unknown>): Scenario {
  const n = (flags.shards as number | undefined) ?? 8;
  const latency = (flags.latency as number | undefined) ?? 10;
  const capacity = (flags.capacity as number | undefined) ?? 4;
  const slow = Math.min(n, (flags.slow as number | undefined) ?? 1);
  const factor = (flags['slow-factor'] as number | undefined) ?? 10;
  const load = (flags.load as number | undefined) ?? 0.6;
  // Capacity in requests/s: each shard serves `capacity` at once, each taking its mean latency.
  let fleetRate = 0;
  const shards: SimShardSpec[] = Array.from({ length: n }, (_, i) => {
    const mean = i < slow ? latency * factor : latency;
    fleetRate += (capacity * 1000) / mean;
    return { id: `shard-${i}`, latency: exponential(mean), capacity };
  });
  return {
    shards,
    arrivals: { rate: fleetRate * load },
    requests: (flags.requests as number | undefined) ?? 20_000,
    seed: (flags.seed as number | undefined) ?? 1,
    balancerOptions: { maxInFlightPerShard: capacity * 4 },
  };
}

export async function simulateCommand(argv: string[], out: NodeJS.WritableStream): Promise<number> {
  const flags = parseFlags(argv, {
    picker: { type: 'list' },
    shards: { type: 'int', min: 1, max: 10_000 },
    latency: { type: 'number', min: 0.001 },
    capacity: { type: 'int', min: 1 },
    slow: { type: 'int', min: 0 },
    'slow-factor': { type: 'number', min: 1 },
    load: { type: 'number', min: 0.01 },
    requests: { type: 'int', min: 1, max: 10_000_000 },
    seed: { type: 'int', min: 0 },
    scenario: { type: 'string' },
    out: { type: 'string' },
    help: { type: 'bool' },
  });
  if (flags.help === true) {
    out.write(`${SIMULATE_HELP}\n`);
    return 0;
  }
  const outFile = flags.out as string | undefined;
  if (outFile !== undefined && !/\.(svg|html?)$/i.test(outFile)) {
    throw new UsageError(`--out must name a .svg or .html file, got "${outFile}"`);
  }
  if (outFile !== undefined) checkWritable(outFile);
  const fromFile = typeof flags.scenario === 'string';
  const bad = fromFile ? 'bad scenario' : 'bad flags';
  if (fromFile) {
    const fleet = FLEET_FLAGS.filter((name) => flags[name] !== undefined);
    if (fleet.length > 0) {
      throw new UsageError(
        `${fleet.map((name) => `--${name}`).join(', ')}: the scenario file describes the fleet`,
      );
    }
  }
  let scenario: Scenario;
  try {
    scenario = fromFile ? loadScenario(flags.scenario as string) : fleetFromFlags(flags);
  } catch (error) {
    if (isShardwiseError(error, 'SHARDWISE_CONFIG')) {
      throw new UsageError(`${bad}: ${(error as Error).message}`);
    }
    throw error;
  }
  if (flags.requests !== undefined) scenario.requests = flags.requests as number;
  if (flags.seed !== undefined) scenario.seed = flags.seed as number;
  const names = (flags.picker as string[] | undefined) ??
    scenario.pickers ?? ['round-robin', 'p2c', 'peak-ewma'];
  if (names.length === 0) throw new UsageError('--picker needs at least one name');
  const factories = names.map((name) => [name, pickerFactory(name)] as const);
  const results: [string, SimulationResult][] = [];
  for (const [name, factory] of factories) {
    try {
      const options: SimulateOptions = {
        picker: factory,
        shards: scenario.shards,
        requests: scenario.requests,
        seed: scenario.seed,
        keys: { count: 10_000, distribution: 'uniform' },
      };
      if (scenario.arrivals !== undefined) options.arrivals = scenario.arrivals;
      if (scenario.concurrency !== undefined) options.concurrency = scenario.concurrency;
      if (scenario.balancerOptions !== undefined)
        options.balancerOptions = scenario.balancerOptions;
      results.push([name, await simulate(options)]);
    } catch (error) {
      if (isShardwiseError(error, 'SHARDWISE_CONFIG'))
        throw new UsageError(`${bad}: ${(error as Error).message}`);
      throw error;
    }
  }
  out.write(
    `${table(
      ['picker', 'mean ms', 'p50', 'p90', 'p99', 'p99.9', 'imbalance', 'failures', 'retries'],
      results.map(([name, r]) => [
        name,
        r.latency.mean.toFixed(1),
        r.latency.p50.toFixed(1),
        r.latency.p90.toFixed(1),
        r.latency.p99.toFixed(1),
        r.latency.p999.toFixed(1),
        r.imbalance.toFixed(3),
        String(r.failures),
        String(r.retries),
      ]),
    )}\n`,
  );
  if (outFile !== undefined) {
    const svg = report(results);
    const body = /\.html?$/i.test(outFile)
      ? `<!doctype html>\n<html><head><meta charset="utf-8"><title>shardwise simulate</title></head><body>\n${svg.replace(/^<\?xml[^>]*>\n/, '')}</body></html>\n`
      : svg;
    try {
      writeFileSync(outFile, body);
    } catch (error) {
      throw new UsageError(`--out: cannot write "${outFile}": ${(error as Error).message}`);
    }
    out.write(`${wrap(`report written to ${outFile}`)}\n`);
  }
  return 0;
}

/** The report: a latency CDF per picker, then each picker's per-shard in-flight over time. */
export function report(results: [string, SimulationResult][]): string {
  const xMax = Math.max(...results.map(([, r]) => r.latency.p999)) * 1.05;
  const charts: ChartOptions[] = [
    {
      id: 'latency-cdf',
      title: 'Latency CDF per picker',
      xLabel: 'latency (ms, virtual, log scale)',
      xLog: true,
      yLabel: 'fraction of runs ≤ latency',
      series: results.map(([name, r]) => ({
        name,
        x: r.latency.cdf.ms,
        y: r.latency.cdf.q,
      })),
      xMax,
    },
  ];
  for (const [name, r] of results) {
    charts.push({
      id: `in-flight-${name}`,
      title: `In flight per shard over time — ${name}`,
      xLabel: 'time (ms, virtual)',
      yLabel: 'calls in flight',
      height: 300,
      series: Object.entries(r.series.inFlight).map(([id, values]) => ({
        name: id,
        x: r.series.t,
        y: values,
      })),
    });
  }
  return svgDocument(charts);
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Fails before the simulation when `--out` names a file in a folder that cannot be written. */
function checkWritable(file: string): void {
  const dir = dirname(resolve(file));
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw new UsageError(`--out: cannot write into "${dir}": ${(error as Error).message}`);
  }
}
