/**
 * `shardwise demo`: 8 local HTTP ingest shards in a child process (one turns slow midway, one
 * fails for a while), a generated dataset pushed through the HTTP balancer with each of three
 * pickers in turn, live progress, and a comparison table ending in the records lost (0).
 */
import { parseFlags, UsageError } from './args.js';
import { batchLine, batchPass } from './demo-batch.js';
import { recordPass } from './demo-pass.js';
import { type Row, rowsTable, winnerLine } from './demo-report.js';
import { DemoShards } from './demo-shards.js';
import { pickerFactory, pickerList } from './pickers.js';
import { wrap } from './wrap.js';

export const DEMO_HELP = `Usage: shardwise demo [--records N] [--shards N] [--picker NAME[,NAME…]]
                      [--concurrency N] [--batch-records N] [--batch-size N]

Starts N local HTTP ingest shards on 127.0.0.1 in a child process and pushes a
generated dataset through shardwise's HTTP balancer with each picker in turn,
one record per request. Midway one shard turns slow (+20 ms a request); for a
while another answers 503. Progress: in a terminal, one line redrawn in place;
in a log, a full entry every 3 s. Ends with a table (throughput, p50/p99
latency, the share of records the slow shard got while it was slow, retries,
ejections, failures, records lost: always 0) and the picker that won at p99.
Then the batched pass: ten times the records, sent in batches (http.ingest,
NDJSON) with the last picker, under the same misbehaviour, beside the
one-record-per-run rate. Every line fits 80 columns.

  --records N         records per picker (default 100000, at most 10000000)
  --shards N          shards (default 8, from 3 to 100)
  --picker LIST       pickers, comma separated
                      (default round-robin,p2c,peak-ewma)
  --concurrency N     requests in flight at most (default 64, at most 10000)
  --batch-records N   records of the batched pass (default 10 × --records,
                      up to 10000000; 0 skips it)
  --batch-size N      records per batch (default 500, at most 100000)
  --help              this text

Pickers:
${pickerList('  ')}`;

export async function demo(
  argv: string[],
  out: NodeJS.WriteStream | NodeJS.WritableStream,
): Promise<number> {
  const flags = parseFlags(argv, {
    // A latency is kept per record, and each shard is a real server on a loopback port.
    records: { type: 'int', min: 1, max: 10_000_000 },
    shards: { type: 'int', min: 3, max: 100 },
    picker: { type: 'list' },
    concurrency: { type: 'int', min: 1, max: 10_000 },
    'batch-records': { type: 'int', min: 0, max: 10_000_000 },
    'batch-size': { type: 'int', min: 1, max: 100_000 },
    help: { type: 'bool' },
  });
  if (flags.help === true) {
    out.write(`${DEMO_HELP}\n`);
    return 0;
  }
  const records = (flags.records as number | undefined) ?? 100_000;
  const shardCount = (flags.shards as number | undefined) ?? 8;
  const concurrency = (flags.concurrency as number | undefined) ?? 64;
  const batchRecords =
    (flags['batch-records'] as number | undefined) ?? Math.min(10 * records, 10_000_000);
  const batchSize = (flags['batch-size'] as number | undefined) ?? 500;
  const names = (flags.picker as string[] | undefined) ?? ['round-robin', 'p2c', 'peak-ewma'];
  if (names.length === 0) throw new UsageError('--picker needs at least one name');
  const factories = names.map((name) => [name, pickerFactory(name)] as const);
  const tty = (out as NodeJS.WriteStream).isTTY === true;
  const slowIndex = 2 % shardCount;
  // Two shards misbehave, each its own way (with 3 shards, 5 % 3 would be the slow one again).
  const failIndex = 5 % shardCount === slowIndex ? (slowIndex + 1) % shardCount : 5 % shardCount;

  out.write(
    `${wrap(
      `shardwise demo: ${records.toLocaleString('en')} records × ${names.length} picker(s), ${shardCount} shards on 127.0.0.1\n` +
        `  shard-${slowIndex} turns slow (+20 ms) at 50 %, shard-${failIndex} answers 503 from 20 % to 40 %`,
      '    ',
      'clause',
    )}\n\n`,
  );
  const { shards, ports } = await DemoShards.start(shardCount);
  const setting = { ports, shards, records, concurrency, slowIndex, failIndex, tty, out };
  const rows: Row[] = [];
  let batched: string | undefined;
  let batchLost = 0;
  try {
    for (const [name, factory] of factories) {
      await shards.ask({ cmd: 'reset' });
      rows.push(await recordPass(name, factory, setting));
    }
    if (batchRecords > 0) {
      const [name, factory] = factories[factories.length - 1]!;
      await shards.ask({ cmd: 'reset' });
      out.write('\n');
      const row = await batchPass(name, factory, { ...setting, records: batchRecords, batchSize });
      batchLost = row.lost;
      batched = batchLine(row, rows.find((r) => r.picker === name)?.rate);
    }
  } finally {
    await shards.stop();
  }
  out.write(`\n${rowsTable(rows)}\n`);
  if (batched !== undefined) out.write(`${wrap(batched, '  ', 'clause')}\n`);
  const lost = rows.reduce((sum, r) => sum + r.lost, 0) + batchLost;
  out.write(`lost: ${lost}\n`);
  out.write(`${wrap(winnerLine(rows), '  ', 'clause')}\n`);
  out.write(
    `${wrap(
      `(to slow: the slow shard's share of the records sent while it was slow; a blind 1/${shardCount} would be ${(100 / shardCount).toFixed(1)} %, and even round robin sends it less, since a shard at its in-flight cap is skipped)`,
      ' ',
    )}\n`,
  );
  return lost === 0 ? 0 : 1;
}
