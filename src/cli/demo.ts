/**
 * `shardwise demo`: 8 local HTTP ingest shards in a child process (one turns slow midway, one
 * fails for a while), a generated dataset pushed through the HTTP balancer with each of three
 * pickers in turn, live progress, and a comparison table ending in the records lost (0).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createHttpBalancer } from '../http/index.js';
import { systemClock } from '../runtime.js';
import { quantile } from '../testing/summary.js';
import { parseFlags, UsageError } from './args.js';
import { pickerFactory } from './pickers.js';
import type { ShardCommand, ShardReply } from './shard-server.js';
import { table } from './table.js';

export const DEMO_HELP = `Usage: shardwise demo [--records N] [--shards N] [--picker NAME[,NAME…]] [--concurrency N]

Starts N local HTTP ingest shards on 127.0.0.1 in a child process and pushes a generated dataset
through shardwise's HTTP balancer with each picker in turn. Midway one shard turns slow (+20 ms a request); for a
while another answers 503. Ends with a table: throughput, p50/p99 latency, the share of records
the slow shard got while it was slow, retries, failures, and records lost (always 0).

  --records N       records per picker (default 100000)
  --shards N        shards (default 8, at least 3)
  --picker LIST     pickers, comma separated (default round-robin,p2c,peak-ewma)
  --concurrency N   requests in flight at most (default 64)
  --help            this text`;

interface Row {
  picker: string;
  seconds: number;
  rate: number;
  p50: number;
  p99: number;
  slowShare: number;
  retries: number;
  ejections: number;
  failed: number;
  lost: number;
}

/** Talks to the shard child process. */
class Shards {
  private readonly child: ChildProcess;
  private readonly waiting: ((reply: ShardReply) => void)[] = [];

  private constructor(child: ChildProcess) {
    this.child = child;
    child.on('message', (reply: ShardReply) => this.waiting.shift()?.(reply));
  }

  static async start(count: number): Promise<{ shards: Shards; ports: number[] }> {
    const main = fileURLToPath(
      new URL(import.meta.url.endsWith('.ts') ? './main.ts' : './main.js', import.meta.url),
    );
    // Under a TypeScript runner (tsx, vitest) the child needs the same loader.
    const execArgv =
      main.endsWith('.ts') && !process.execArgv.some((a) => a.includes('tsx'))
        ? ['--import', 'tsx']
        : process.execArgv;
    const child = fork(main, ['__shards', String(count)], {
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const shards = new Shards(child);
    const first = await new Promise<ShardReply>((resolve, reject) => {
      shards.waiting.push(resolve);
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(new Error(`the shard process exited early (code ${code})`)),
      );
    });
    if (!('ports' in first)) throw new Error('the shard process did not report its ports');
    return { shards, ports: first.ports };
  }

  ask(command: ShardCommand): Promise<ShardReply> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.send(command);
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.once('exit', () => resolve());
      this.child.send({ cmd: 'stop' } satisfies ShardCommand);
    });
  }
}

export async function demo(
  argv: string[],
  out: NodeJS.WriteStream | NodeJS.WritableStream,
): Promise<number> {
  const flags = parseFlags(argv, {
    records: { type: 'int', min: 1 },
    shards: { type: 'int', min: 3 },
    picker: { type: 'list' },
    concurrency: { type: 'int', min: 1 },
    help: { type: 'bool' },
  });
  if (flags.help === true) {
    out.write(`${DEMO_HELP}\n`);
    return 0;
  }
  const records = (flags.records as number | undefined) ?? 100_000;
  const shardCount = (flags.shards as number | undefined) ?? 8;
  const concurrency = (flags.concurrency as number | undefined) ?? 64;
  const names = (flags.picker as string[] | undefined) ?? ['round-robin', 'p2c', 'peak-ewma'];
  if (names.length === 0) throw new UsageError('--picker needs at least one name');
  const factories = names.map((name) => [name, pickerFactory(name)] as const);
  const tty = (out as NodeJS.WriteStream).isTTY === true;
  const slowIndex = 2 % shardCount;
  const failIndex = 5 % shardCount;

  out.write(
    `shardwise demo: ${records.toLocaleString('en')} records × ${names.length} picker(s), ${shardCount} shards on 127.0.0.1\n` +
      `  shard-${slowIndex} turns slow (+20 ms a request) at 50 %, shard-${failIndex} answers 503 from 20 % to 40 %\n\n`,
  );
  const { shards, ports } = await Shards.start(shardCount);
  const rows: Row[] = [];
  try {
    for (const [name, factory] of factories) {
      await shards.ask({ cmd: 'reset' });
      rows.push(
        await pushAll(name, factory, ports, shards, {
          records,
          concurrency,
          slowIndex,
          failIndex,
          tty,
          out,
        }),
      );
    }
  } finally {
    await shards.stop();
  }
  out.write(
    `\n${table(
      [
        'picker',
        'seconds',
        'records/s',
        'p50 ms',
        'p99 ms',
        'to slow shard',
        'retries',
        'ejections',
        'failed',
        'lost',
      ],
      rows.map((r) => [
        r.picker,
        r.seconds.toFixed(1),
        Math.round(r.rate).toLocaleString('en'),
        r.p50.toFixed(1),
        r.p99.toFixed(1),
        `${(r.slowShare * 100).toFixed(1)} %`,
        String(r.retries),
        String(r.ejections),
        String(r.failed),
        String(r.lost),
      ]),
    )}\n`,
  );
  const lost = rows.reduce((sum, r) => sum + r.lost, 0);
  out.write(`lost: ${lost}\n`);
  out.write(
    `(to slow shard: its share of the records sent while it was slow; a blind 1/${shardCount} would be ${(100 / shardCount).toFixed(1)} %, ` +
      'and even round robin sends it less, since a shard at its in-flight cap is skipped)\n',
  );
  return lost === 0 ? 0 : 1;
}

async function pushAll(
  name: string,
  factory: () => import('../types.js').Picker,
  ports: number[],
  shards: Shards,
  o: {
    records: number;
    concurrency: number;
    slowIndex: number;
    failIndex: number;
    tty: boolean;
    out: NodeJS.WritableStream;
  },
): Promise<Row> {
  const origins = ports.map((port) => `http://127.0.0.1:${port}`);
  const slowOrigin = origins[o.slowIndex]!;
  const balancer = createHttpBalancer({
    shards: origins.map((origin, i) => ({ id: `shard-${i}`, target: origin })),
    picker: factory(),
    connectionsPerShard: 16,
    maxInFlightPerShard: 16,
    maxInFlight: o.concurrency,
    maxQueued: o.concurrency,
    retry: { attempts: 6, backoff: { baseMs: 10, maxMs: 200 } },
    health: { baseEjectionMs: 2_000 },
  });
  const latencies = new Float64Array(o.records);
  const perShard = new Map<string, number>();
  let done = 0;
  let failed = 0;
  const failedIds = new Set<number>();
  let retries = 0;
  let slowPhase = false;
  let slowSent = 0;
  let slowTotal = 0;
  balancer.on('retry', () => {
    retries++;
  });
  balancer.on('success', ({ shardId }) => {
    perShard.set(shardId, (perShard.get(shardId) ?? 0) + 1);
  });
  balancer.on('pick', ({ shard }) => {
    if (!slowPhase) return;
    slowTotal++;
    if ((shard.target as { origin: string }).origin === slowOrigin) slowSent++;
  });
  const started = systemClock.now();
  let lastDraw = started;
  let lastDone = 0;
  const draw = (final: boolean) => {
    const now = systemClock.now();
    if (!final && now - lastDraw < (o.tty ? 200 : 1_000)) return;
    const rate = ((done - lastDone) * 1000) / Math.max(1, now - lastDraw);
    lastDraw = now;
    lastDone = done;
    const { inFlight, queued } = balancer.stats();
    const share = [...perShard.entries()]
      .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
      .map(
        ([id, n]) => `${id.replace('shard-', '')}:${((n * 100) / Math.max(1, done)).toFixed(0)}%`,
      )
      .join(' ');
    const line = `${name.padEnd(12)} ${String(done).padStart(7)}/${o.records} ${Math.round(rate).toString().padStart(6)} rec/s  in-flight ${String(inFlight).padStart(3)} queued ${String(queued).padStart(3)}  retries ${retries} errors ${failed}  [${share}]`;
    o.out.write(o.tty ? `\r\x1b[2K${line}${final ? '\n' : ''}` : `${line}\n`);
  };
  const failFrom = Math.floor(o.records * 0.2);
  const failTo = Math.floor(o.records * 0.4);
  const slowFrom = Math.floor(o.records * 0.5);
  for (let i = 0; i < o.records; i++) {
    if (i === failFrom) await shards.ask({ cmd: 'set', shard: o.failIndex, failing: true });
    if (i === failTo) await shards.ask({ cmd: 'set', shard: o.failIndex, failing: false });
    if (i === slowFrom) {
      await shards.ask({ cmd: 'set', shard: o.slowIndex, delayMs: 20 });
      slowPhase = true;
    }
    await balancer.ready();
    const body = JSON.stringify({
      id: i,
      source: 'demo',
      payload: `record-${i}-${'x'.repeat(64)}`,
    });
    const t0 = systemClock.now();
    balancer
      .request({
        method: 'POST',
        path: '/ingest',
        body,
        headers: { 'content-type': 'application/json' },
        idempotent: true,
      })
      .then(
        () => {
          latencies[i] = systemClock.now() - t0;
          done++;
          draw(false);
        },
        () => {
          latencies[i] = systemClock.now() - t0;
          failed++;
          failedIds.add(i);
          done++;
        },
      );
  }
  await balancer.drain();
  const seconds = (systemClock.now() - started) / 1000;
  draw(true);
  const ejections = balancer.stats().shards.reduce((sum, s) => sum + s.ejections, 0);
  await balancer.close();
  const collected = await shards.ask({ cmd: 'collect' });
  const received = new Set('ids' in collected ? collected.ids : []);
  // Lost: neither received by a shard nor reported to the caller as failed.
  let lost = 0;
  for (let i = 0; i < o.records; i++) if (!received.has(i) && !failedIds.has(i)) lost++;
  const sorted = Float64Array.from(latencies).sort();
  return {
    picker: name,
    seconds,
    rate: o.records / seconds,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    slowShare: slowTotal === 0 ? 0 : slowSent / slowTotal,
    retries,
    ejections,
    failed,
    lost,
  };
}
