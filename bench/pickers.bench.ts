/**
 * ns per `pick()` for each built-in picker at 8, 100 and 1000 shards, beside a bare
 * `arr[(random() * n) | 0]` baseline measured in the same process with the same seeded random,
 * plus approximate bytes allocated per pick.
 *
 * Each picker runs in its own child process: the P2C family shares one `pick` closure site
 * (`twoChoices`), so measuring them in one process would make its `loadOf` call megamorphic and
 * charge every picker for the others. A production balancer uses one picker. Inside a child the
 * baseline and the picker alternate round by round; the ratio is the median of per-round ratios.
 *
 * Shards are real `ShardState`s from a real `Balancer` on a `ManualClock`, with Peak-EWMA samples
 * (1–50 ms) and a few calls left in flight, so load figures differ and EWMA reads decay. The
 * `peak-ewma (systemClock)` row is the same picker over a balancer on the default system clock:
 * every cost read then calls `performance.now()`. Beside the medians, the fastest of the 25 rounds
 * (pick and baseline): on a machine other processes share, the median carries their load too.
 *
 * Run: npx tsx bench/pickers.bench.ts   (or npm run bench pickers)
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  Balancer,
  type Clock,
  leastInFlight,
  type Picker,
  type PickRequest,
  p2c,
  peakEwma,
  random,
  roundRobin,
  type ShardState,
  systemClock,
  weightedRoundRobin,
} from '../src/index.js';
import { ManualClock, seededRandom } from '../src/testing/index.js';
import {
  collectGarbage,
  fmt,
  goal,
  median,
  nowNs,
  printHeader,
  printTable,
  ratio,
  turn,
} from './lib.js';

const SIZES = [8, 100, 1000] as const;
const SEED = 0x5eed;
const ROUNDS = 25;
const BATCH_TARGET_NS = 4_000_000;
const ALLOC_PICKS = 1_000_000;
const ALLOC_CHUNK = 10_000;
const CASE_ENV = 'SHARDWISE_PICKER_CASE';

interface Case {
  label: string;
  make: () => Picker;
  clock: 'manual' | 'system';
}

const CASES: Case[] = [
  { label: 'round-robin', make: roundRobin, clock: 'manual' },
  { label: 'weighted-round-robin', make: weightedRoundRobin, clock: 'manual' },
  { label: 'random', make: random, clock: 'manual' },
  { label: 'p2c (inFlight)', make: () => p2c(), clock: 'manual' },
  { label: "p2c({ load: 'ewma' })", make: () => p2c({ load: 'ewma' }), clock: 'manual' },
  { label: 'p2c({ choices: 3 })', make: () => p2c({ choices: 3 }), clock: 'manual' },
  { label: 'least-in-flight', make: leastInFlight, clock: 'manual' },
  { label: 'peak-ewma', make: () => peakEwma(), clock: 'manual' },
  { label: 'peak-ewma (systemClock)', make: () => peakEwma(), clock: 'system' },
];

interface SizeResult {
  n: number;
  ns: number;
  baseNs: number;
  /** Fastest round: what the pick costs when no other process takes the core. */
  minNs: number;
  baseMinNs: number;
  ratio: number;
  bytes: number;
  baseBytes: number;
}

interface CaseResult {
  label: string;
  sizes: SizeResult[];
}

type PickLoop = (
  picker: Picker,
  shards: readonly ShardState[],
  request: PickRequest,
  iterations: number,
) => number;
type BaseLoop = (shards: readonly ShardState[], rnd: () => number, iterations: number) => number;

// A fresh function per measured case gives each its own type feedback (as mitata does), so one
// case's call sites never turn polymorphic because of another's. The sum keeps the work alive.
function makePickLoop(): PickLoop {
  return new Function(
    'picker',
    'shards',
    'request',
    'iterations',
    'let acc = 0;\nfor (let i = 0; i < iterations; i++) acc += picker.pick(shards, request).index;\nreturn acc;',
  ) as PickLoop;
}

function makeBaseLoop(): BaseLoop {
  return new Function(
    'shards',
    'rnd',
    'iterations',
    'const n = shards.length;\nlet acc = 0;\nfor (let i = 0; i < iterations; i++) acc += shards[(rnd() * n) | 0].index;\nreturn acc;',
  ) as BaseLoop;
}

/** A real balancer with `n` shards whose load figures differ: sampled EWMAs, some calls in flight. */
async function buildFleet(n: number, kind: Case['clock']): Promise<readonly ShardState[]> {
  const manual = new ManualClock();
  const clock: Clock = kind === 'manual' ? manual : systemClock;
  const rnd = seededRandom(SEED + n);
  const balancer = new Balancer({
    shards: Array.from({ length: n }, (_, i) => ({ id: `s${i}`, target: i })),
    picker: p2c(),
    clock,
    random: seededRandom(SEED),
    maxInFlightPerShard: Number.POSITIVE_INFINITY,
    retry: false,
    health: false,
  });
  const settled: Promise<unknown>[] = [];
  for (let k = 0; k < 3 * n; k++) {
    const latencyMs = 1 + rnd() * 49;
    settled.push(
      balancer.run(() =>
        kind === 'manual'
          ? new Promise((resolve) => manual.setTimer(() => resolve(1), latencyMs))
          : Promise.resolve(1),
      ),
    );
  }
  manual.advance(100);
  await Promise.all(settled);
  manual.advance(1); // reads now decay the estimates (Math.exp per read)
  // Calls that never end: in-flight counts of 0, 1, 2… differ from shard to shard.
  for (let k = 0; k < n; k++) void balancer.run(() => new Promise<never>(() => {}));
  await turn();
  return balancer.shards;
}

/**
 * Approximate bytes allocated per call of `body`: heap growth over chunks with no GC in them.
 * 1M calls, or fewer for an O(n) picker (about half a second's worth, at least 50k).
 */
function bytesPerCall(body: (iterations: number) => number, nsPerPick: number): number {
  const total = Math.min(ALLOC_PICKS, Math.max(50 * ALLOC_CHUNK, Math.round(5e8 / nsPerPick)));
  collectGarbage();
  let grown = 0;
  let counted = 0;
  for (let done = 0; done < total; done += ALLOC_CHUNK) {
    const before = process.memoryUsage().heapUsed;
    body(ALLOC_CHUNK);
    const after = process.memoryUsage().heapUsed;
    // A scavenge inside the chunk shrinks the heap: that chunk says nothing, skip it.
    if (after >= before) {
      grown += after - before;
      counted += ALLOC_CHUNK;
    }
  }
  return counted === 0 ? Number.NaN : grown / counted;
}

async function child(label: string): Promise<void> {
  const spec = CASES.find((c) => c.label === label);
  if (spec === undefined) throw new Error(`unknown picker case "${label}"`);
  const fleets = [];
  for (const n of SIZES) {
    const shards = await buildFleet(n, spec.clock);
    const picker = spec.make();
    picker.rebuild?.(shards);
    const request: PickRequest = {
      key: undefined,
      attempt: 1,
      random: seededRandom(SEED),
      totalInFlight: 0,
    };
    const baseRandom = seededRandom(SEED);
    const pickLoop = makePickLoop();
    const baseLoop = makeBaseLoop();
    const runPick = (iterations: number) => pickLoop(picker, shards, request, iterations);
    const runBase = (iterations: number) => baseLoop(shards, baseRandom, iterations);
    // Warm up (tier up to optimized code) for ~100 ms or 300k picks, then size a batch to ~4 ms.
    const pickNs = warmUp(runPick);
    const baseNs = warmUp(runBase);
    const pickIters = Math.max(1_000, Math.round(BATCH_TARGET_NS / pickNs));
    const baseIters = Math.max(1_000, Math.round(BATCH_TARGET_NS / baseNs));
    fleets.push({
      n,
      runPick,
      runBase,
      pickIters,
      baseIters,
      pick: [] as number[],
      base: [] as number[],
    });
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const f of fleets) {
      if (round % 2 === 0) {
        f.base.push(nsPerCall(f.runBase, f.baseIters));
        f.pick.push(nsPerCall(f.runPick, f.pickIters));
      } else {
        f.pick.push(nsPerCall(f.runPick, f.pickIters));
        f.base.push(nsPerCall(f.runBase, f.baseIters));
      }
    }
  }
  const sizes: SizeResult[] = fleets.map((f) => ({
    n: f.n,
    ns: median(f.pick),
    baseNs: median(f.base),
    minNs: Math.min(...f.pick),
    baseMinNs: Math.min(...f.base),
    ratio: median(f.pick.map((p, i) => p / f.base[i]!)),
    bytes: bytesPerCall(f.runPick, median(f.pick)),
    baseBytes: bytesPerCall(f.runBase, median(f.base)),
  }));
  const result: CaseResult = { label, sizes };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

function nsPerCall(body: (iterations: number) => number, iterations: number): number {
  const t0 = nowNs();
  body(iterations);
  return (nowNs() - t0) / iterations;
}

/** Runs `body` for ~100 ms (at most 300k calls) so it is optimized; returns the last ns/call. */
function warmUp(body: (iterations: number) => number): number {
  let ns = nsPerCall(body, 1_000);
  const iterations = Math.min(300_000, Math.max(1_000, Math.round(1e8 / ns)));
  for (let k = 0; k < 3; k++) ns = nsPerCall(body, Math.ceil(iterations / 3));
  return ns;
}

/** Runs one case in a child node process with the same loader flags; resolves with its result. */
function spawnCase(label: string): Promise<CaseResult> {
  const execArgv = process.execArgv.includes('--expose-gc')
    ? process.execArgv
    : [...process.execArgv, '--expose-gc'];
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...execArgv, fileURLToPath(import.meta.url)], {
      env: { ...process.env, [CASE_ENV]: label },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (chunk: string) => {
      out += chunk;
    });
    proc.on('error', reject);
    proc.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code !== 0 || line === undefined) {
        reject(new Error(`picker case "${label}" failed (exit ${code}):\n${out}`));
        return;
      }
      resolve(JSON.parse(line.slice('RESULT '.length)) as CaseResult);
    });
  });
}

async function parent(): Promise<void> {
  printHeader('pickers: ns per pick() vs bare arr[(random() * n) | 0], same seeded random');
  console.log(
    '(one child process per picker, each with --expose-gc; medians of 25 interleaved rounds)\n',
  );
  const results: CaseResult[] = [];
  for (const c of CASES) {
    process.stderr.write(`  measuring ${c.label}…\n`);
    results.push(await spawnCase(c.label));
  }
  const rows: string[][] = [];
  for (const r of results) {
    for (const s of r.sizes) {
      rows.push([
        r.label,
        String(s.n),
        fmt(s.ns, 1),
        fmt(s.baseNs, 1),
        ratio(s.ratio),
        `${fmt(s.minNs, 1)} / ${fmt(s.baseMinNs, 1)}`,
        fmt(s.bytes, 2),
        fmt(s.baseBytes, 2),
      ]);
    }
  }
  printTable(
    [
      'picker',
      'shards',
      'ns/pick',
      'baseline ns',
      'vs baseline',
      'fastest round ns (pick / baseline)',
      'bytes/pick',
      'baseline bytes',
    ],
    rows,
  );

  const at = (r: CaseResult, n: number) => r.sizes.find((s) => s.n === n)!;
  console.log('\nscaling (ns at 1000 shards ÷ ns at 8; goal ≤ 1.2 for the O(1) pickers):\n');
  printTable(
    ['picker', 'ns @8', 'ns @1000', '1000/8', 'baseline 1000/8'],
    results.map((r) => [
      r.label,
      fmt(at(r, 8).ns, 1),
      fmt(at(r, 1000).ns, 1),
      ratio(at(r, 1000).ns / at(r, 8).ns),
      ratio(at(r, 1000).baseNs / at(r, 8).baseNs),
    ]),
  );

  const byLabel = (label: string) => results.find((r) => r.label === label)!;
  const p2cRes = byLabel('p2c (inFlight)');
  const ewmaRes = byLabel('peak-ewma');
  const ewmaSys = byLabel('peak-ewma (systemClock)');
  const p2cWorst = Math.max(...p2cRes.sizes.map((s) => s.ns));
  const p2cScale = at(p2cRes, 1000).ns / at(p2cRes, 8).ns;
  const vsP2c = (r: CaseResult) => Math.max(...r.sizes.map((s) => s.ns / at(p2cRes, s.n).ns));
  console.log('\ngoals:\n');
  printTable(
    ['goal', 'measured', 'status'],
    [
      ['p2c ≤ 50 ns/pick (worst size)', `${fmt(p2cWorst, 1)} ns`, goal(p2cWorst <= 50)],
      [
        `p2c @1000 ≤ 25 ns (median; baseline ${fmt(at(p2cRes, 1000).baseNs, 1)} ns)`,
        `${fmt(at(p2cRes, 1000).ns, 1)} ns`,
        goal(at(p2cRes, 1000).ns <= 25),
      ],
      [
        `p2c @1000 ≤ 25 ns (fastest round; baseline ${fmt(at(p2cRes, 1000).baseMinNs, 1)} ns)`,
        `${fmt(at(p2cRes, 1000).minNs, 1)} ns`,
        goal(at(p2cRes, 1000).minNs <= 25),
      ],
      ['p2c 1000/8 ≤ 1.2', ratio(p2cScale), goal(p2cScale <= 1.2)],
      ['peak-ewma ≤ 2× p2c (worst size)', ratio(vsP2c(ewmaRes)), goal(vsP2c(ewmaRes) <= 2)],
      [
        'peak-ewma (systemClock) ≤ 2× p2c (worst size)',
        ratio(vsP2c(ewmaSys)),
        goal(vsP2c(ewmaSys) <= 2),
      ],
    ],
  );
  console.log(
    '\n(p2c and peak-ewma are measured in separate processes; their ratio compares two medians of the same machine run.)',
  );
}

const caseLabel = process.env[CASE_ENV];
if (caseLabel !== undefined) await child(caseLabel);
else await parent();
