/**
 * The per-put overhead of `shardwise/s3` over a bare `PutObjectCommand` on the same client,
 * against a real S3-protocol server (s3rver, in a child process on 127.0.0.1).
 *
 *   npx tsx bench/s3-put.bench.ts     (or npm run bench s3-put)
 *
 * The contenders put the same objects (4 KiB, the same keys) to the same 3 buckets, round robin,
 * through one keep-alive client, at the same concurrency, in rounds that go through every order
 * of the three. Printed: per-put time (elapsed ÷ puts, at that concurrency), mean latency, and
 * the client's CPU per put (the transport's own cost; the server is another process); the
 * overhead is a contender's figure over the bare one's in the same round, median and range over
 * the rounds. The third contender is the bare put again, the A/A control: its ratio to the bare
 * put is this run's noise, as nothing differs but the closure. Goal: per-put time ≤ 1.05× the
 * bare put's. The figures go to docs/performance.md.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { roundRobin } from '../src/pickers/index.js';
import { createS3Balancer, createS3Client, type S3Balancer } from '../src/s3/index.js';
import {
  type FigureRow,
  fmt,
  machineLoad,
  median,
  printTable,
  ratio,
  ratioSpread,
  recordFigures,
  spread,
} from './lib.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const BUCKETS = ['bench-a', 'bench-b', 'bench-c'];
const CONCURRENCY = 16;
const PUTS = 150;
const WARMUP = 200;
const ROUNDS = Number(process.env.SHARDWISE_BENCH_ROUNDS ?? 30);
const BODY = Buffer.alloc(4096, 120);
const CONTENT_TYPE = 'application/octet-stream';

interface Round {
  /** Elapsed wall time per put, ms (inverse throughput at this concurrency). */
  perPutMs: number;
  /** Mean latency of one put, ms. */
  latencyMs: number;
  /** Client CPU per put, µs. */
  cpuUs: number;
}

type Put = (index: number) => Promise<void>;

function startServer(): Promise<{ child: ChildProcess; endpoint: string }> {
  const child = fork(new URL('./s3-fixtures/server.mjs', import.meta.url), BUCKETS, {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { port: number }) => {
      resolve({ child, endpoint: `http://127.0.0.1:${m.port}` });
    });
  });
}

function bare(client: S3Client): Put {
  return async (i) => {
    await client.send(
      new PutObjectCommand({
        Bucket: BUCKETS[i % BUCKETS.length]!,
        Key: `objects/${i}.bin`,
        Body: BODY,
        ContentLength: BODY.byteLength,
        ContentType: CONTENT_TYPE,
      }),
    );
  };
}

function shardwise(s3: S3Balancer): Put {
  return async (i) => {
    await s3.putObject({ key: `objects/${i}.bin`, body: BODY, contentType: CONTENT_TYPE });
  };
}

/** `total` puts, `CONCURRENCY` at a time, bounded in time. */
async function drive(put: Put, total: number, measure: boolean): Promise<Round> {
  let next = 0;
  let latencySum = 0;
  const deadline = performance.now() + 120_000;
  const worker = async () => {
    while (next < total) {
      if (performance.now() > deadline) throw new Error('round took over 120 s');
      const i = next++;
      const t0 = performance.now();
      await put(i);
      latencySum += performance.now() - t0;
    }
  };
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  if (!measure) return { perPutMs: 0, latencyMs: 0, cpuUs: 0 };
  return {
    perPutMs: elapsed / total,
    latencyMs: latencySum / total,
    cpuUs: (cpu.user + cpu.system) / total,
  };
}

async function main() {
  const { child, endpoint } = await startServer();
  const client = createS3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    // Newer SDKs wrap bodies in checksummed chunked framing that s3rver stores verbatim.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const s3 = createS3Balancer({
    targets: BUCKETS.map((bucket) => ({ client, bucket })),
    picker: roundRobin(),
    maxInFlightPerShard: CONCURRENCY,
  });
  const contenders = { bare: bare(client), control: bare(client), shardwise: shardwise(s3) };
  type Name = keyof typeof contenders;
  const names = Object.keys(contenders) as Name[];
  // Every order of the three in turn, so none always runs first or after the same one.
  const orders = names.flatMap((a) =>
    names.flatMap((b) => (b === a ? [] : [[a, b, names.find((c) => c !== a && c !== b)!]])),
  );
  try {
    console.log(
      `node ${process.version}, s3rver in a child process, ${BODY.byteLength} B puts to ${BUCKETS.length} buckets, concurrency ${CONCURRENCY}, ${PUTS} puts per round, ${ROUNDS} rounds through the ${orders.length} orders; ${machineLoad()} at the start\n`,
    );
    // Warm-up: connections opened, both code paths compiled.
    for (const name of names) await drive(contenders[name], WARMUP, false);
    const rounds: Record<Name, Round[]> = { bare: [], control: [], shardwise: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const name of orders[r % orders.length]!) {
        rounds[name].push(await drive(contenders[name], PUTS, true));
      }
    }
    const over = (name: Name, figure: keyof Round) =>
      spread(rounds[name].map((s, i) => s[figure] / rounds.bare[i]![figure]));
    const med = (name: Name, figure: keyof Round) => median(rounds[name].map((x) => x[figure]));
    const perPut = over('shardwise', 'perPutMs');
    const latency = over('shardwise', 'latencyMs');
    const cpu = over('shardwise', 'cpuUs');
    const noise = over('control', 'perPutMs');
    const noiseCpu = over('control', 'cpuUs');
    printTable(
      ['contender', 'per-put time ms', 'mean latency ms', 'client CPU µs/put'],
      [
        [
          'bare client.send(new PutObjectCommand(…))',
          fmt(med('bare', 'perPutMs'), 3),
          fmt(med('bare', 'latencyMs'), 3),
          fmt(med('bare', 'cpuUs'), 0),
        ],
        [
          'bare again (A/A control: only the closure differs)',
          fmt(med('control', 'perPutMs'), 3),
          fmt(med('control', 'latencyMs'), 3),
          fmt(med('control', 'cpuUs'), 0),
        ],
        [
          's3.putObject(…) (shardwise/s3, round robin)',
          fmt(med('shardwise', 'perPutMs'), 3),
          fmt(med('shardwise', 'latencyMs'), 3),
          fmt(med('shardwise', 'cpuUs'), 0),
        ],
        [
          'control / bare (median, range): the noise',
          ratioSpread(noise, 3),
          ratioSpread(over('control', 'latencyMs'), 3),
          ratioSpread(noiseCpu, 3),
        ],
        [
          'shardwise / bare (median, range)',
          ratioSpread(perPut, 3),
          ratioSpread(latency, 3),
          ratioSpread(cpu, 3),
        ],
      ],
    );
    console.log(
      `\ngoal: per-put time ≤ 1.05× the bare put's: ${perPut.median <= 1.05 ? 'ok' : 'MISS'} (the A/A control ${ratio(noise.median, 3)}); ${machineLoad()} at the end`,
    );
    const rows: FigureRow[] = [
      {
        figure: `shardwise/s3 putObject, per-put time ms (${BODY.byteLength} B, concurrency ${CONCURRENCY}, s3rver)`,
        value: fmt(med('shardwise', 'perPutMs'), 3),
        peer: `bare PutObjectCommand ${fmt(med('bare', 'perPutMs'), 3)}`,
        ratio: ratioSpread(perPut, 3),
        goal: `≤ 1.05×: ${perPut.median <= 1.05 ? 'ok' : 'MISS'}`,
      },
      {
        figure: 'shardwise/s3 putObject, client CPU µs per put',
        value: fmt(med('shardwise', 'cpuUs'), 0),
        peer: `bare PutObjectCommand ${fmt(med('bare', 'cpuUs'), 0)}`,
        ratio: ratioSpread(cpu, 3),
        goal: '(lower is better)',
      },
      {
        figure: "A/A control: the bare put again, per-put time ms (this run's noise)",
        value: fmt(med('control', 'perPutMs'), 3),
        peer: `bare PutObjectCommand ${fmt(med('bare', 'perPutMs'), 3)}`,
        ratio: ratioSpread(noise, 3),
        goal: '(1.00× but for noise)',
      },
    ];
    recordFigures('s3-put', rows);
  } finally {
    await s3.close();
    client.destroy();
    child.disconnect();
  }
}

await main();
