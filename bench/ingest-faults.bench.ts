/**
 * Keyed ingestion through real faults (issue #30): what a shard's trouble costs the records of
 * every shard, measured against the fault-free run of the same records in the same process.
 *
 *   node --expose-gc --import tsx bench/ingest-faults.bench.ts [scenario …]
 *
 * Scenarios (all by default; name some to run only them — the fault-free baseline runs first
 * whenever a scenario compares with it): fault-free, kill, never-back, push-back, hang, slow,
 * malformed, clickhouse.
 *
 * Four loopback HTTP shards, each its own process (test/fixtures/killable-shards.ts: a kill is a
 * SIGKILL, a restart listens on the same port), store the `id` of every NDJSON record they take,
 * with the time, so duplicates and the healthy shards' records/s during an outage are counted on
 * the servers' side. The client is what a new user writes: `createHttpBalancer({ origins, picker:
 * consistentHash() })` and `http.ingest(records, { path, key: (r) => r.tenant })`, defaults
 * everywhere else; ~100-byte records over 256 tenants. Every scenario has a deadline (an abort,
 * then a non-draining close), so a stall is printed, not waited out. With clickhouse-server
 * installed, the kill is also done to four real ClickHouse 18.16 servers (test/fixtures/clickhouse.ts).
 *
 * Figures: time and its ratio to the fault-free run; records/s of the healthy shards while one is
 * down against their fault-free records/s; failed; lost (taken − written − failed − uncertain:
 * must be 0); written but not stored (must be 0); duplicates stored (stored − distinct ids), beside
 * `summary.uncertain` and `summary.resent` (the duplicates the client says it may have made).
 * The fault-free runs are interleaved with a peer — a hand-written keyed loop over raw undici
 * pools, the same batches per home — so the price of the fault handling shows as a ratio in one run.
 * With `SHARDWISE_FAULTS_BASELINE=<git ref>` (e.g. `main`), that commit's `src/` is extracted
 * (`git archive`) to a temp dir and its `http.ingest` runs interleaved too: this build against
 * another, fault-free, in one process.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { consistentHash, createHttpBalancer, type HttpBalancer } from '../src/http/index.js';
import { IngestError, type IngestSummary } from '../src/index.js';
import {
  CLICKHOUSE_SKIP_MESSAGE,
  type ClickHouseFleet,
  clickhouseAvailable,
  insertPath,
  startClickHouse,
} from '../test/fixtures/clickhouse.js';
import { type KillableShards, startKillableShards } from '../test/fixtures/killable-shards.js';
import { collectGarbage, fmt, machineLoad, median, printHeader, printTable, ratio } from './lib.js';

/** Every parameter of every scenario, in one place. */
const P = {
  shards: 4,
  tenants: 256,
  /**
   * Records of the full-size runs: ~3–5 s fault-free on this shared 2-core machine (the issue used
   * 1M); `SHARDWISE_FAULTS_RECORDS` overrides it.
   */
  records: Number(process.env.SHARDWISE_FAULTS_RECORDS ?? 1_000_000),
  /** Batching as the user leaves it (the library's defaults). */
  batch: {},
  path: '/ingest',
  /** Fault-free runs; their median is the baseline of every ratio. */
  faultFreeRuns: 3,
  /** A scenario that has not ended by then is aborted, then closed without draining after the grace. */
  deadlineMs: 90_000,
  graceMs: 10_000,
  /** The shard that fails in the kill, never-back, push-back and hang scenarios. */
  victim: 1,
  /** When the fault starts: once this share of the records has been taken from the source. */
  faultAt: 1 / 3,
  kill: { outageMs: 2_000 },
  /**
   * The dead home's records fail at `deliveryTimeoutMs` (default 120 s, past the deadline of a
   * bench scenario): 10 s here, so the scenario shows the time a dead home costs — about the
   * fault-free time plus one delivery timeout — within its 60 s deadline.
   */
  neverBack: { deadlineMs: 60_000, deliveryTimeoutMs: 10_000 },
  /**
   * A slow home beside a fast one: two tenants in turn, one record per batch (each batch is one
   * run, as in the issue's 35-of-200 figure); measured over `windowMs`, then stopped. A round of
   * each contender first (unmeasured: JIT, connections), then `rounds` of each, interleaved, each
   * round in the other order; medians.
   */
  slow: {
    slowShard: 0,
    fastShard: 2,
    records: 400,
    delayMs: 1_000,
    batch: { maxRecords: 1 },
    windowMs: 1_500,
    rounds: 5,
  },
  pushBack: { status: 503, retryAfterS: 1, forMs: 5_000 },
  /**
   * One shard stores each body, then never answers: `requests` requests (fewer than the 5
   * consecutive failures that eject a shard), or every request for `windowMs`; the balancer's
   * `timeoutMs` ends each attempt first.
   */
  hang: { timeoutMs: 1_000, requests: 4, windowMs: 3_000 },
  /**
   * Shards answer the batch holding the bad line 400 (split by default), or 500 as ClickHouse does:
   * retried as a server error by default, split when `classify` reads it as `'rejected'`.
   */
  malformed: {
    records: 20_000,
    batch: { maxRecords: 5_000 },
    at: 10_000,
    cases: [
      { status: 400, classify: false },
      { status: 500, classify: false },
      { status: 500, classify: true },
    ],
  },
  /**
   * Four real servers. Rows: 1M in the issue; here ClickHouse shares two loaded cores with the
   * client, and 1M rows take ~45 s fault-free, so fewer (`SHARDWISE_FAULTS_CH_RECORDS` overrides).
   * `downMs`: least time between the SIGTERM and the start (the stop itself may take longer).
   */
  clickhouse: {
    servers: 4,
    records: Number(process.env.SHARDWISE_FAULTS_CH_RECORDS ?? 200_000),
    downMs: 2_500,
    table: 'faults',
  },
} as const;

const TENANTS = Array.from({ length: P.tenants }, (_, i) => `t-${String(i).padStart(3, '0')}`);
const PAD = 'abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz';

interface Rec {
  id: number;
  tenant: string;
  v: string;
}

/**
 * How many records a source has given (the records "taken"), and a promise for the moment it has
 * given `at` of them: faults start at a point of the run, whatever the machine's speed today.
 */
class Taken {
  n = 0;
  /** True once `at` records were taken; false if the ingestion ended before (see `end`). */
  readonly reached: Promise<boolean>;
  #resolve!: (reached: boolean) => void;
  constructor(readonly at = Number.POSITIVE_INFINITY) {
    this.reached = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
  count(): void {
    if (++this.n === this.at) this.#resolve(true);
  }
  /** The ingestion is over: a fault still waiting for its moment is not started. */
  end(): void {
    this.#resolve(false);
  }
}

/** ~100-byte records, tenants in turn, made as they are read. */
function* records(n: number, taken: Taken, tenants: readonly string[] = TENANTS): Generator<Rec> {
  for (let id = 0; id < n; id++) {
    taken.count();
    yield { id, tenant: tenants[id % tenants.length]!, v: PAD };
  }
}

const key = (r: Rec) => r.tenant;

// ——— one bounded ingestion ———

interface Outcome<R> {
  ms: number;
  /** How it ended: `finished`, `aborted` (deadline), `closed` (grace over), `stuck` (never settled). */
  how: 'finished' | 'aborted' | 'closed' | 'stuck';
  summary: IngestSummary<R> | undefined;
  /** Records reported failed: known not stored. */
  failedIds: number[];
  /** Records reported uncertain (`error.uncertain`): sent, no answer; stored or not. */
  uncertainIds: number[];
  /** Records not written by error name (`ShardUnavailableError`, `UncertainWriteError`, …). */
  errors: Map<string, number>;
  taken: number;
  /** Longest time between two `onProgress` calls, ms. */
  silentMs: number;
}

/** The options a scenario gives `http.ingest` (the bench adds `signal`, `onFailed`, `onProgress`). */
interface IngestOptions<R> {
  path: string;
  key: (record: R) => string;
  batch: { maxRecords?: number };
  idempotent?: boolean;
  deliveryTimeoutMs?: number;
  classify?: (answer: { statusCode: number; body: string }) => 'rejected' | undefined;
}

async function bounded<R>(
  http: HttpBalancer,
  source: Iterable<R>,
  taken: Taken,
  options: IngestOptions<R>,
  idOf: (r: R) => number,
  deadlineMs: number = P.deadlineMs,
  graceMs: number = P.graceMs,
): Promise<Outcome<R>> {
  const controller = new AbortController();
  const failedIds: number[] = [];
  const uncertainIds: number[] = [];
  const errors = new Map<string, number>();
  let how: Outcome<R>['how'] = 'finished';
  const t0 = performance.now();
  let lastProgress = t0;
  let silentMs = 0;
  const abort = setTimeout(() => {
    how = 'aborted';
    controller.abort(new Error(`the bench's deadline (${deadlineMs} ms)`));
  }, deadlineMs);
  const close = setTimeout(() => {
    how = 'closed';
    http.close({ drain: false }).catch(() => {});
  }, deadlineMs + graceMs);
  let stuckTimer: NodeJS.Timeout | undefined;
  const stuck = new Promise<undefined>((resolve) => {
    stuckTimer = setTimeout(() => resolve(undefined), deadlineMs + graceMs + P.graceMs);
  });
  const run = http
    .ingest(source, {
      ...options,
      signal: controller.signal,
      // Without onUncertain, onFailed hears of uncertain records too, their error saying so.
      onFailed: (r, error) => {
        if ((error as { uncertain?: unknown } | undefined)?.uncertain === true) {
          uncertainIds.push(idOf(r));
        } else failedIds.push(idOf(r));
        const name = (error as { name?: string } | undefined)?.name ?? typeof error;
        errors.set(name, (errors.get(name) ?? 0) + 1);
      },
      onProgress: () => {
        const now = performance.now();
        silentMs = Math.max(silentMs, now - lastProgress);
        lastProgress = now;
      },
    })
    .catch((e: unknown) => {
      if (e instanceof IngestError) return e.summary as IngestSummary<R>;
      throw e;
    });
  const summary = await Promise.race([run, stuck]);
  taken.end();
  clearTimeout(abort);
  clearTimeout(close);
  clearTimeout(stuckTimer);
  const end = performance.now();
  silentMs = Math.max(silentMs, end - lastProgress);
  if (summary === undefined) how = 'stuck';
  return { ms: end - t0, how, summary, failedIds, uncertainIds, errors, taken: taken.n, silentMs };
}

function balancer(origins: readonly string[], extra: Record<string, unknown> = {}): HttpBalancer {
  return createHttpBalancer({ origins: [...origins], picker: consistentHash(), ...extra });
}

async function closeQuietly(http: HttpBalancer): Promise<void> {
  await http.close({ timeoutMs: 5_000 }).catch(() => {});
}

const after = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const s = (ms: number) => `${fmt(ms / 1000, 1)} s`;
const n = (x: number | undefined) => (x === undefined ? '-' : x.toLocaleString('en-US'));
const rate = (count: number, ms: number) => (ms > 0 ? fmt((count * 1000) / ms, 0) : '-');

/**
 * `summary.uncertain` and `summary.resent` (issue #30 added them), read by name so that this bench
 * still runs on a commit before them, where they print as '-'.
 */
function outcomeFigure(summary: unknown, name: 'uncertain' | 'resent'): number | undefined {
  const value = (summary as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'number' ? value : undefined;
}

/** Records taken and neither written, failed nor (once it exists) uncertain. */
function lostOf(o: Outcome<unknown>): number {
  const s = o.summary;
  return o.taken - (s?.written ?? 0) - (s?.failed ?? 0) - (outcomeFigure(s, 'uncertain') ?? 0);
}

/** Server-side figures of a run over the HTTP shards. */
async function account<R>(fleet: KillableShards, o: Outcome<R>) {
  const report = await fleet.report();
  const failed = o.summary?.failed ?? 0;
  const written = o.summary?.written ?? 0;
  const failedStored = await fleet.storedOf(o.failedIds);
  const uncertainStored = await fleet.storedOf(o.uncertainIds);
  return {
    report,
    written,
    failed,
    lost: lostOf(o),
    /** Reported failed (known not stored), and on a shard: must be 0. */
    failedStored,
    uncertainStored,
    /** Reported written, and on no shard (written, failed and uncertain ids are disjoint). */
    writtenMissing: written - (report.distinct - failedStored - uncertainStored),
    duplicates: report.duplicates,
  };
}

/** The longest gap between two batches stored on any of `shards`, within [from, to). */
function longestStall(fleet: KillableShards, shards: number[], from: number, to: number): number {
  const times = shards
    .flatMap((i) => fleet.arrivals(i).map((a) => a.at))
    .filter((t) => t >= from && t < to)
    .sort((a, b) => a - b);
  let longest = 0;
  let last = from;
  for (const t of times) {
    longest = Math.max(longest, t - last);
    last = t;
  }
  return Math.max(longest, to - last);
}

async function fresh(fleet: KillableShards): Promise<void> {
  for (let i = 0; i < fleet.count; i++) {
    if (!fleet.isUp(i)) await fleet.restart(i);
    await fleet.heal(i);
  }
  await fleet.reset();
  collectGarbage();
}

/** Records/s the healthy shards stored in [from, to), or undefined if the fault never started. */
function healthyRate(fleet: KillableShards, from: number, to: number): number | undefined {
  if (from === 0 || to <= from) return undefined;
  return (fleet.recordsBetween(from, to, healthy) * 1000) / (to - from);
}

/** The record whose taking starts the fault. */
const FAULT_AT = Math.round(P.records * P.faultAt);

const healthy = Array.from({ length: P.shards }, (_, i) => i).filter((i) => i !== P.victim);

// ——— scenarios ———

interface FaultFree {
  ms: number;
  /** Records/s of the shards that stay healthy in the fault scenarios. */
  healthyRate: number;
}

const ROWS: string[][] = [];
const HEADERS = [
  'scenario',
  'how it ended',
  'time',
  'vs fault-free',
  'records/s',
  'healthy shards rec/s in fault',
  'vs fault-free',
  'written',
  'failed',
  'failed but stored',
  'lost',
  'written, not stored',
  'duplicates',
  'uncertain',
  'uncertain, stored',
  'resent',
];

function row(
  name: string,
  o: Outcome<unknown>,
  ff: FaultFree | undefined,
  a: Awaited<ReturnType<typeof account>>,
  healthyInFault?: number,
): void {
  ROWS.push([
    name,
    o.how,
    s(o.ms),
    ff === undefined ? '-' : ratio(o.ms / ff.ms),
    rate(a.written, o.ms),
    healthyInFault === undefined ? '-' : fmt(healthyInFault, 0),
    healthyInFault === undefined || ff === undefined ? '-' : ratio(healthyInFault / ff.healthyRate),
    n(a.written),
    n(a.failed),
    n(a.failedStored),
    n(a.lost),
    n(a.writtenMissing),
    n(a.duplicates),
    n(outcomeFigure(o.summary, 'uncertain')),
    n(a.uncertainStored),
    n(outcomeFigure(o.summary, 'resent')),
  ]);
}

const NOTES: string[] = [];

/** The balancer's defaults the peer copies: connections per shard, calls in flight per shard. */
const PEER = { connections: 8, inFlightPerShard: 32, maxRecords: 500 };

/**
 * The peer of the fault-free runs: what a careful user writes by hand with undici for keyed
 * batches — each tenant's home from the same ring (asked once per tenant), `maxRecords` records
 * per home joined as NDJSON, one Pool per shard with the balancer's connections, at most its cap
 * of requests in flight per shard. No retries, no deadlines, no accounting per record: the
 * floor of what delivery costs. Resolves with the time taken, ms.
 */
async function handWritten(fleet: KillableShards, count: number): Promise<number> {
  const ring = balancer(fleet.origins);
  const homeOf = new Map(TENANTS.map((t) => [t, fleet.origins.indexOf(String(ring.homeOf(t)))]));
  await closeQuietly(ring);
  const pools = fleet.origins.map(
    (o) => new Pool(o, { connections: PEER.connections, pipelining: 1 }),
  );
  const headers = { 'content-type': 'application/x-ndjson' };
  const inFlight = pools.map(() => 0);
  const open: string[][] = pools.map(() => []);
  let written = 0;
  let failed: unknown;
  let wake: (() => void) | undefined;
  const send = (home: number, batch: string[]) => {
    inFlight[home]!++;
    pools[home]!.request({ method: 'POST', path: P.path, headers, body: `${batch.join('\n')}\n` })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        written += batch.length;
      })
      .catch((error: unknown) => {
        failed ??= error;
      })
      .finally(() => {
        inFlight[home]!--;
        wake?.();
      });
  };
  const t0 = performance.now();
  const taken = new Taken();
  for (const r of records(count, taken)) {
    const home = homeOf.get(r.tenant)!;
    const batch = open[home]!;
    batch.push(JSON.stringify(r));
    if (batch.length === PEER.maxRecords) {
      open[home] = [];
      while (inFlight[home]! >= PEER.inFlightPerShard) await new Promise<void>((w) => (wake = w));
      send(home, batch);
    }
  }
  open.forEach((batch, home) => {
    if (batch.length > 0) send(home, batch);
  });
  while (inFlight.some((x) => x > 0)) await new Promise<void>((w) => (wake = w));
  const ms = performance.now() - t0;
  await Promise.all(pools.map((p) => p.close()));
  if (failed !== undefined || written !== count) {
    throw new Error(`the peer wrote ${written} of ${count}: ${String(failed)}`);
  }
  return ms;
}

type HttpModule = typeof import('../src/http/index.js');

/**
 * `src/` of the commit `ref`, extracted to a temp dir (removed at exit) that resolves packages
 * from this repository's node_modules, and its `shardwise/http` loaded: another build's
 * `http.ingest` in this process.
 */
async function loadBaseline(ref: string): Promise<HttpModule> {
  const repo = fileURLToPath(new URL('..', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'shardwise-baseline-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const tar = execFileSync('git', ['-C', repo, 'archive', '--format=tar', ref, 'src'], {
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  return (await import(join(dir, 'src', 'http', 'index.ts'))) as HttpModule;
}

/** One fault-free keyed ingestion with another build's `http.ingest`: its time, ms. */
async function baselineRun(fleet: KillableShards, lib: HttpModule, count: number): Promise<number> {
  const http = lib.createHttpBalancer({
    origins: [...fleet.origins],
    picker: lib.consistentHash(),
  });
  const taken = new Taken();
  const t0 = performance.now();
  // The callbacks and signal this build's runs get from `bounded`, so both pay for the same.
  const summary = await http.ingest(records(count, taken), {
    path: P.path,
    key,
    signal: new AbortController().signal,
    onFailed: () => {},
    onProgress: () => {},
  });
  const ms = performance.now() - t0;
  await http.close({ timeoutMs: 5_000 }).catch(() => {});
  if (summary.written !== count)
    throw new Error(`the baseline wrote ${summary.written} of ${count}`);
  return ms;
}

async function faultFree(fleet: KillableShards): Promise<FaultFree> {
  const ref = process.env.SHARDWISE_FAULTS_BASELINE;
  const baseline = ref === undefined || ref === '' ? undefined : await loadBaseline(ref);
  // Warm-up (JIT, connections, the young generation), unmeasured.
  await fresh(fleet);
  {
    const http = balancer(fleet.origins);
    const taken = new Taken();
    await bounded(http, records(P.records / 2, taken), taken, opts(), idOfRec);
    await closeQuietly(http);
  }
  await fresh(fleet);
  await handWritten(fleet, P.records / 2);
  if (baseline !== undefined) {
    await fresh(fleet);
    await baselineRun(fleet, baseline, P.records / 2);
  }
  // The baseline is the median of a few runs: on a shared machine one run can be far off. The
  // peer's runs (and another build's) are interleaved with them, each round in another order.
  const runs: { o: Outcome<Rec>; a: Awaited<ReturnType<typeof account>> }[] = [];
  const peerMs: number[] = [];
  const baselineMs: number[] = [];
  const contenders: (() => Promise<void>)[] = [
    async () => {
      await fresh(fleet);
      const http = balancer(fleet.origins);
      const taken = new Taken();
      const o = await bounded(http, records(P.records, taken), taken, opts(), idOfRec);
      await closeQuietly(http);
      runs.push({ o, a: await account(fleet, o) });
    },
    async () => {
      await fresh(fleet);
      peerMs.push(await handWritten(fleet, P.records));
    },
  ];
  if (baseline !== undefined) {
    contenders.push(async () => {
      await fresh(fleet);
      baselineMs.push(await baselineRun(fleet, baseline, P.records));
    });
  }
  for (let r = 0; r < P.faultFreeRuns; r++) {
    for (let c = 0; c < contenders.length; c++) await contenders[(r + c) % contenders.length]!();
  }
  const ingestRate = (P.records * 1000) / median(runs.map((r) => r.o.ms));
  const peerRate = (P.records * 1000) / median(peerMs);
  const baselineRate = (P.records * 1000) / median(baselineMs);
  const vsBaseline = (rate: number) => (baseline === undefined ? '-' : ratio(rate / baselineRate));
  PEER_ROWS.push([
    'http.ingest, keyed, defaults (this build)',
    fmt(ingestRate, 0),
    ratio(ingestRate / peerRate),
    vsBaseline(ingestRate),
  ]);
  if (baseline !== undefined) {
    PEER_ROWS.push([
      `http.ingest, keyed, defaults, at ${ref}`,
      fmt(baselineRate, 0),
      ratio(baselineRate / peerRate),
      ratio(1),
    ]);
    NOTES.push(`${ref}: ${P.faultFreeRuns} runs took ${baselineMs.map((t) => s(t)).join(', ')}`);
  }
  PEER_ROWS.push([
    `hand-written keyed loop over raw undici pools (peer; ${PEER.maxRecords} per batch, ${PEER.connections} connections, ${PEER.inFlightPerShard} in flight per shard)`,
    fmt(peerRate, 0),
    ratio(1),
    vsBaseline(peerRate),
  ]);
  NOTES.push(`peer: ${P.faultFreeRuns} runs took ${peerMs.map((t) => s(t)).join(', ')}`);
  const times = runs.map((r) => r.o.ms).sort((x, y) => x - y);
  const { o, a } = runs.find((r) => r.o.ms === times[times.length >> 1])!;
  const healthyStored = a.report.shards
    .filter((r) => healthy.includes(r.index))
    .reduce((x, r) => x + r.stored, 0);
  const ff = { ms: o.ms, healthyRate: (healthyStored * 1000) / o.ms };
  row(`fault-free, ${n(P.records)} records (median of ${P.faultFreeRuns})`, o, undefined, a);
  NOTES.push(
    `fault-free: ${P.faultFreeRuns} runs took ${times.map((t) => s(t)).join(', ')}; in the median one ` +
      `the ${healthy.length} shards other than shard ${P.victim} took ${fmt(ff.healthyRate, 0)} records/s; ` +
      `longest onProgress silence ${s(o.silentMs)}`,
  );
  return ff;
}

const PEER_ROWS: string[][] = [];

const idOfRec = (r: Rec) => r.id;
const opts = (extra: Partial<IngestOptions<Rec>> = {}): IngestOptions<Rec> => ({
  path: P.path,
  key,
  batch: { ...P.batch },
  ...extra,
});

async function killRestart(fleet: KillableShards, ff: FaultFree): Promise<void> {
  await fresh(fleet);
  const http = balancer(fleet.origins);
  const taken = new Taken(FAULT_AT);
  let killedAt = 0;
  let upAt = 0;
  const fault = (async () => {
    if (!(await taken.reached)) return;
    killedAt = fleet.now();
    await fleet.kill(P.victim);
    await after(P.kill.outageMs);
    await fleet.restart(P.victim);
    upAt = fleet.now();
  })();
  const start = fleet.now();
  const o = await bounded(http, records(P.records, taken), taken, opts(), idOfRec);
  const end = fleet.now();
  await fault;
  const stats = http.stats();
  await closeQuietly(http);
  const a = await account(fleet, o);
  const outage = upAt - killedAt;
  const back = fleet.arrivals(P.victim).find((x) => x.at >= upAt);
  row(
    `shard ${P.victim} killed for ${s(P.kill.outageMs)} at ${fmt(P.faultAt * 100, 0)} %, restarted`,
    o,
    ff,
    a,
    healthyRate(fleet, killedAt, upAt),
  );
  NOTES.push(
    `kill: outage ${s(outage)} (kill → listening again); the restarted shard's first stored batch ` +
      `${back === undefined ? 'never came' : `${s(back.at - upAt)} after it listened`}; ` +
      `healthy shards' longest stall ${s(longestStall(fleet, healthy, start, end))}; ` +
      `longest onProgress silence ${s(o.silentMs)}; ejections ${stats.shards.map((x) => x.ejections).join('/')}; ` +
      `retries ${n(o.summary?.retries)}, batches ${n(o.summary?.batches)}; failures: ${firstError(o)}`,
  );
}

async function neverBack(fleet: KillableShards, ff: FaultFree): Promise<void> {
  await fresh(fleet);
  const http = balancer(fleet.origins);
  const taken = new Taken(FAULT_AT);
  let killedAt = 0;
  const fault = (async () => {
    if (!(await taken.reached)) return;
    killedAt = fleet.now();
    await fleet.kill(P.victim);
  })();
  const start = fleet.now();
  const o = await bounded(
    http,
    records(P.records, taken),
    taken,
    opts({ deliveryTimeoutMs: P.neverBack.deliveryTimeoutMs }),
    idOfRec,
    P.neverBack.deadlineMs,
  );
  await fault;
  const end = fleet.now();
  await closeQuietly(http);
  const a = await account(fleet, o);
  const lastHealthy = Math.max(...healthy.flatMap((i) => fleet.arrivals(i).map((x) => x.at)));
  row(
    `shard ${P.victim} killed at ${fmt(P.faultAt * 100, 0)} %, never back (deliveryTimeoutMs ${n(P.neverBack.deliveryTimeoutMs)}; deadline ${s(P.neverBack.deadlineMs)})`,
    o,
    ff,
    a,
    healthyRate(fleet, killedAt, end),
  );
  NOTES.push(
    `never-back: taken ${n(o.taken)} of ${n(P.records)}; the healthy shards' last batch stored ` +
      `${s(lastHealthy - start)} after the start (fault-free run: ${s(ff.ms)}); ` +
      `longest onProgress silence ${s(o.silentMs)}; failures: ${firstError(o)}`,
  );
  await fleet.restart(P.victim);
}

async function slowHome(fleet: KillableShards): Promise<void> {
  const { slowShard, fastShard, windowMs } = P.slow;
  const probe = balancer(fleet.origins);
  const homeIndex = (t: string) => fleet.origins.indexOf(String(probe.homeOf(t)));
  const pair = [
    TENANTS.find((t) => homeIndex(t) === slowShard)!,
    TENANTS.find((t) => homeIndex(t) === fastShard)!,
  ];
  await closeQuietly(probe);
  const fastCount = Math.ceil(P.slow.records / 2);
  /** The fast home's records stored in the window, and when its last one was (if it was). */
  const measure = async (how: 'ingest' | 'run') => {
    await fresh(fleet);
    await fleet.slow(slowShard, P.slow.delayMs);
    const http = balancer(fleet.origins);
    const taken = new Taken();
    const start = fleet.now();
    // Stopped once the window is over (the slow home's records would take many seconds more).
    const stopAt = windowMs + 500;
    if (how === 'ingest') {
      const opt = opts({ batch: { ...P.slow.batch } });
      await bounded(http, records(P.slow.records, taken, pair), taken, opt, idOfRec, stopAt, 0);
    } else {
      // The same batches (per tenant, in source order), each one plain run() on its key's home.
      const headers = { 'content-type': 'application/x-ndjson' };
      const stop = after(stopAt).then(() => http.close({ drain: false }).catch(() => {}));
      const open = new Map<string, Rec[]>();
      const send = (tenant: string, batch: Rec[]) => {
        const body = batch.map((r) => `${JSON.stringify(r)}\n`).join('');
        http
          .run(
            (shard, ctx) =>
              http.sendTo(shard, { method: 'POST', path: P.path, headers, body }, ctx),
            { key: tenant },
          )
          .catch(() => {});
      };
      for (const r of records(P.slow.records, taken, pair)) {
        const batch = open.get(r.tenant) ?? [];
        batch.push(r);
        open.set(r.tenant, batch);
        if (batch.length === P.slow.batch.maxRecords) {
          open.delete(r.tenant);
          await http.ready();
          send(r.tenant, batch);
        }
      }
      for (const [tenant, batch] of open) send(tenant, batch);
      await stop;
    }
    await closeQuietly(http);
    await fleet.sync();
    let count = 0;
    let doneMs = Number.POSITIVE_INFINITY;
    for (const x of fleet.arrivals(fastShard)) {
      count += x.count;
      if (count >= fastCount && doneMs === Number.POSITIVE_INFINITY) doneMs = x.at - start;
    }
    const inWindow = fleet.recordsBetween(start, start + windowMs, [fastShard]);
    // Records/s while it had records to send: over the window, or until its last one if sooner.
    return { inWindow, doneMs, rate: (inWindow * 1000) / Math.min(windowMs, doneMs) };
  };
  await measure('ingest');
  await measure('run');
  const rounds: Record<'ingest' | 'run', Awaited<ReturnType<typeof measure>>[]> = {
    ingest: [],
    run: [],
  };
  for (let r = 0; r < P.slow.rounds; r++) {
    const order = r % 2 === 0 ? (['ingest', 'run'] as const) : (['run', 'ingest'] as const);
    for (const how of order) rounds[how].push(await measure(how));
  }
  const medianOf = (how: 'ingest' | 'run') => ({
    inWindow: median(rounds[how].map((x) => x.inWindow)),
    doneMs: median(rounds[how].map((x) => x.doneMs)),
    rate: median(rounds[how].map((x) => x.rate)),
  });
  const viaIngest = medianOf('ingest');
  const viaRun = medianOf('run');
  await fleet.heal(slowShard);
  const done = (ms: number) => (Number.isFinite(ms) ? s(ms) : `not in ${s(windowMs + 500)}`);
  SLOW_ROWS.push(
    [
      'http.ingest',
      `${n(viaIngest.inWindow)} of ${n(fastCount)}`,
      done(viaIngest.doneMs),
      fmt(viaIngest.rate, 0),
      ratio(viaIngest.rate / viaRun.rate, 3),
    ],
    [
      'plain run() per batch (peer)',
      `${n(viaRun.inWindow)} of ${n(fastCount)}`,
      done(viaRun.doneMs),
      fmt(viaRun.rate, 0),
      ratio(1),
    ],
  );
}
const SLOW_ROWS: string[][] = [];

async function pushBack(fleet: KillableShards, ff: FaultFree): Promise<void> {
  await fresh(fleet);
  const http = balancer(fleet.origins);
  const taken = new Taken(FAULT_AT);
  let from = 0;
  const fault = (async () => {
    if (!(await taken.reached)) return;
    from = fleet.now();
    await fleet.pushBack(P.victim, P.pushBack);
  })();
  const o = await bounded(http, records(P.records, taken), taken, opts(), idOfRec);
  const end = fleet.now();
  await fault;
  await closeQuietly(http);
  const a = await account(fleet, o);
  row(
    `shard ${P.victim} answers ${P.pushBack.status} + Retry-After: ${P.pushBack.retryAfterS} for ${s(P.pushBack.forMs)}`,
    o,
    ff,
    a,
    healthyRate(fleet, from, Math.min(from + P.pushBack.forMs, end)),
  );
  const refused = a.report.shards[P.victim]!.statuses[String(P.pushBack.status)] ?? 0;
  NOTES.push(
    `push-back: ${n(refused)} requests answered ${P.pushBack.status}; failures: ${firstError(o)}`,
  );
}

async function hang(
  fleet: KillableShards,
  ff: FaultFree,
  idempotent: boolean,
  kind: 'requests' | 'window',
): Promise<void> {
  await fresh(fleet);
  const http = balancer(fleet.origins, { timeoutMs: P.hang.timeoutMs });
  const taken = new Taken(FAULT_AT);
  let from = 0;
  const fault = (async () => {
    if (!(await taken.reached)) return;
    from = fleet.now();
    await fleet.hang(
      P.victim,
      kind === 'requests'
        ? { afterBody: true, store: true, requests: P.hang.requests }
        : { afterBody: true, store: true, forMs: P.hang.windowMs },
    );
  })();
  const o = await bounded(http, records(P.records, taken), taken, opts({ idempotent }), idOfRec);
  const end = fleet.now();
  await fault;
  await closeQuietly(http);
  const a = await account(fleet, o);
  const what =
    kind === 'requests' ? `${P.hang.requests} requests` : `every request for ${s(P.hang.windowMs)}`;
  row(
    `shard ${P.victim} stores, never answers ${what}; timeoutMs ${n(P.hang.timeoutMs)}, idempotent: ${idempotent}`,
    o,
    ff,
    a,
    kind === 'window' ? healthyRate(fleet, from, Math.min(from + P.hang.windowMs, end)) : undefined,
  );
  const hung = a.report.shards[P.victim]!.statuses.hung ?? 0;
  NOTES.push(
    `hang ${what} (idempotent: ${idempotent}): ${n(hung)} requests hung; summary written ` +
      `${n(o.summary?.written)}, failed ${n(o.summary?.failed)}, retries ${n(o.summary?.retries)}; ` +
      `failures: ${firstError(o)}`,
  );
}

/** The failed records by error name, and the first failure's message. */
function firstError(o: Outcome<unknown>): string {
  const e = o.summary?.failures[0]?.error as { name?: string; message?: string } | undefined;
  if (e === undefined) return 'none failed';
  const names = [...o.errors].map(([name, count]) => `${n(count)} ${name}`).join(', ');
  return `${names}; first: "${String(e.message).slice(0, 200)}"`;
}

/** Pre-encoded NDJSON lines (they pass through untouched): one of them is malformed. */
function* lines(count: number, bad: number | undefined, taken: Taken): Generator<string> {
  for (let id = 0; id < count; id++) {
    taken.count();
    const tenant = TENANTS[id % TENANTS.length]!;
    yield id === bad
      ? `{"id":${id},"tenant":"${tenant}","v":oops}`
      : JSON.stringify({ id, tenant, v: PAD });
  }
}
const tenantOfLine = (line: string) =>
  line.slice(line.indexOf('"tenant":"') + 10, -1).split('"')[0]!;
const idOfLine = (line: string) => Number(line.slice(6, line.indexOf(',')));

async function malformed(fleet: KillableShards): Promise<void> {
  const m = P.malformed;
  // The fixture's answer to a refused batch: `Cannot parse input (at row N)`, as ClickHouse says.
  const parseError = ({ statusCode, body }: { statusCode: number; body: string }) =>
    statusCode === 500 && /Cannot parse/.test(body) ? ('rejected' as const) : undefined;
  const runLines = async (bad: number | undefined, status: number, classify: boolean) => {
    await fresh(fleet);
    for (let i = 0; i < fleet.count; i++) await fleet.reject(i, 'oops', { status });
    const http = balancer(fleet.origins);
    const taken = new Taken();
    const o = await bounded(
      http,
      lines(m.records, bad, taken),
      taken,
      {
        path: P.path,
        key: tenantOfLine,
        batch: { ...m.batch },
        ...(classify ? { classify: parseError } : {}),
      },
      idOfLine,
      60_000,
    );
    const stats = http.stats();
    await closeQuietly(http);
    const report = await fleet.report();
    return { o, report, stats };
  };
  for (const { status, classify } of m.cases) {
    const clean = await runLines(undefined, status, classify);
    const dirty = await runLines(m.at, status, classify);
    const refusals = dirty.report.shards.reduce((x, r) => x + (r.statuses[String(status)] ?? 0), 0);
    const failures = dirty.stats.shards.reduce((x, r) => x + r.failures, 0);
    const ejections = dirty.stats.shards.reduce((x, r) => x + r.ejections, 0);
    const charged = dirty.stats.shards.filter((r) => r.failures > 0).length;
    MALFORMED_ROWS.push([
      `1 bad line in ${n(m.records)}, shards answer ${status}${classify ? ', classify reads it as rejected' : ''}`,
      dirty.o.how,
      n(dirty.o.summary?.written),
      n(dirty.o.summary?.failed),
      n(dirty.report.requests - clean.report.requests),
      n(refusals),
      `${failures} on ${charged} shard(s)`,
      String(ejections),
      n(lostOf(dirty.o)),
    ]);
  }
  for (let i = 0; i < fleet.count; i++) await fleet.heal(i);
}
const MALFORMED_ROWS: string[][] = [];

async function clickhouse(): Promise<void> {
  const c = P.clickhouse;
  if (!clickhouseAvailable()) {
    console.log(`\n${CLICKHOUSE_SKIP_MESSAGE}: the ClickHouse rows`);
    return;
  }
  let ch: ClickHouseFleet | undefined;
  try {
    ch = await startClickHouse(c.servers);
    const once = async (fault: 'SIGTERM' | 'SIGKILL' | undefined) => {
      await ch!.createTable(c.table);
      const http = balancer(ch!.origins);
      const taken = new Taken(fault === undefined ? undefined : Math.round(c.records * P.faultAt));
      let down = 0;
      let up = 0;
      let stoppedMs = 0;
      let startMs = 0;
      const act = (async () => {
        if (fault === undefined || !(await taken.reached)) return;
        down = performance.now();
        await (fault === 'SIGTERM' ? ch!.stop(P.victim) : ch!.kill(P.victim));
        stoppedMs = performance.now() - down;
        const left = c.downMs - stoppedMs;
        if (left > 0) await after(left);
        const starting = performance.now();
        await ch!.restart(P.victim);
        up = performance.now();
        startMs = up - starting;
      })();
      const start = performance.now();
      const o = await bounded(
        http,
        records(c.records, taken),
        taken,
        opts({ path: insertPath(c.table) }),
        idOfRec,
      );
      const end = start + o.ms;
      await act;
      await closeQuietly(http);
      const counts = await ch!.counts(c.table);
      const placement = await ch!.placement(c.table);
      const split = [...placement.values()].filter((servers) => servers.length > 1).length;
      if (fault !== undefined) {
        const exitedAfterEnd = down + stoppedMs > end;
        NOTES.push(
          `clickhouse ${fault}: to exit ${s(stoppedMs)}${exitedAfterEnd ? ' (after the ingestion had ended)' : ''}, ` +
            `start to /ping ${s(startMs)}; retries ${n(o.summary?.retries)}; longest onProgress ` +
            `silence ${s(o.silentMs)}; failures: ${firstError(o)}`,
        );
      }
      return { o, counts, split, downMs: up - down };
    };
    const ff = await once(undefined);
    const faults = [
      ['SIGTERM', await once('SIGTERM')],
      ['SIGKILL', await once('SIGKILL')],
    ] as const;
    const rows: (readonly [string, typeof ff])[] = [[`fault-free, ${n(c.records)} rows`, ff]];
    for (const [signal, r] of faults) {
      rows.push([
        `server ${P.victim} ${signal}, started again ${s(r.downMs)} later, at ${fmt(P.faultAt * 100, 0)} %`,
        r,
      ]);
    }
    for (const [name, r] of rows) {
      const written = r.o.summary?.written ?? 0;
      const failed = r.o.summary?.failed ?? 0;
      CLICKHOUSE_ROWS.push([
        name,
        r.o.how,
        s(r.o.ms),
        ratio(r.o.ms / ff.o.ms),
        rate(written, r.o.ms),
        n(written),
        n(failed),
        n(lostOf(r.o)),
        n(r.counts.rows),
        n(r.counts.duplicates),
        // Counted written and not there: at least this many (a failed row present would hide one).
        n(Math.max(0, written - r.counts.distinct)),
        String(r.split),
        n(outcomeFigure(r.o.summary, 'uncertain')),
        n(outcomeFigure(r.o.summary, 'resent')),
      ]);
    }
  } catch (error) {
    console.log(`\nClickHouse scenario failed: ${(error as Error).message}`);
  } finally {
    await ch?.dropTable(c.table).catch(() => {});
    await ch?.close();
  }
}
const CLICKHOUSE_ROWS: string[][] = [];

async function main(): Promise<void> {
  const only = new Set(process.argv.slice(2));
  const wanted = (name: string) => only.size === 0 || only.has(name);
  printHeader(
    `ingest through real faults: ${P.shards} HTTP shards (a process each), keyed by tenant, consistentHash(), defaults`,
  );
  console.log(`machine: ${machineLoad()} at the start\n`);
  const fleet = await startKillableShards({ count: P.shards });
  try {
    if (['fault-free', 'kill', 'never-back', 'push-back', 'hang'].some(wanted)) {
      const ff = await faultFree(fleet);
      if (wanted('kill')) await killRestart(fleet, ff);
      if (wanted('never-back')) await neverBack(fleet, ff);
      if (wanted('push-back')) await pushBack(fleet, ff);
      if (wanted('hang')) {
        await hang(fleet, ff, false, 'requests');
        await hang(fleet, ff, true, 'requests');
        await hang(fleet, ff, true, 'window');
      }
      printTable(HEADERS, ROWS);
      if (PEER_ROWS.length > 0) {
        console.log(
          `\n### fault-free, ${n(P.records)} records: http.ingest against a hand-written peer and another build (medians of ${P.faultFreeRuns} interleaved runs)\n`,
        );
        const against = process.env.SHARDWISE_FAULTS_BASELINE;
        printTable(
          [
            'contender',
            'records/s',
            'vs peer',
            `vs ${against === undefined || against === '' ? 'another build (SHARDWISE_FAULTS_BASELINE)' : against}`,
          ],
          PEER_ROWS,
        );
      }
    }
    if (wanted('slow')) {
      await slowHome(fleet);
      console.log(
        `\n### a slow home (shard ${P.slow.slowShard} answers each batch after ${s(P.slow.delayMs)}) beside a fast one: ` +
          `${n(P.slow.records)} records, two tenants in turn, batches of ${P.slow.batch.maxRecords}; medians of ${P.slow.rounds} interleaved rounds\n`,
      );
      printTable(
        [
          'fast home through',
          `stored in the first ${s(P.slow.windowMs)}`,
          'all stored after',
          'fast home records/s',
          'vs run()',
        ],
        SLOW_ROWS,
      );
    }
    if (wanted('malformed')) {
      await malformed(fleet);
      console.log(
        `\n### one malformed record (batches of ${n(P.malformed.batch.maxRecords)}; every shard refuses the batch holding it)\n`,
      );
      printTable(
        [
          'scenario',
          'how it ended',
          'written',
          'failed',
          'extra requests',
          'refusals',
          'failed attempts (stats)',
          'ejections',
          'lost',
        ],
        MALFORMED_ROWS,
      );
    }
  } finally {
    await fleet.close();
  }
  if (wanted('clickhouse')) {
    await clickhouse();
    if (CLICKHOUSE_ROWS.length > 0) {
      console.log(
        `\n### ${P.clickhouse.servers} ClickHouse 18.16 servers, keyed by tenant, INSERT … FORMAT JSONEachRow\n`,
      );
      printTable(
        [
          'scenario',
          'how it ended',
          'time',
          'vs fault-free',
          'rows/s',
          'written',
          'failed',
          'lost',
          'rows present',
          'duplicates',
          'written, not present (at least)',
          'tenants split',
          'uncertain',
          'resent',
        ],
        CLICKHOUSE_ROWS,
      );
    }
  }
  console.log('');
  for (const note of NOTES) console.log(`- ${note}`);
  console.log(`\nmachine: ${machineLoad()} at the end`);
}

await main();
// Undici sockets and a hung request's timers may still be open: the figures are out, end here.
process.exit(0);
