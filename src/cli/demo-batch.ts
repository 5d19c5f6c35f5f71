/**
 * The demo's batched pass: the same kind of records, many more of them, sent in batches through
 * `http.ingest` (NDJSON, one request per batch) while the shards misbehave on the same cues as
 * the other passes (one answers 503 for a while, one turns slow), then checked against what the
 * shards received: a record neither received nor reported failed is lost.
 */

import { systemClock } from '../base/runtime.js';
import type { Picker } from '../base/types.js';
import { createHttpBalancer } from '../http/index.js';
import type { PassSetting } from './demo-pass.js';
import { Progress } from './progress.js';

/** What the batched pass measured. */
export interface BatchRow {
  picker: string;
  records: number;
  batchSize: number;
  seconds: number;
  /** Records per second over the pass. */
  rate: number;
  batches: number;
  retries: number;
  failed: number;
  /** Records neither received by a shard nor reported failed. */
  lost: number;
}

/** One demo record: about 100 bytes of JSON once encoded. */
export interface DemoRecord {
  id: number;
  source: string;
  payload: string;
}

/** Sends `records` records in batches of `batchSize` with `factory`'s picker; resolves its row. */
export async function batchPass(
  name: string,
  factory: () => Picker,
  o: PassSetting & { batchSize: number },
): Promise<BatchRow> {
  const origins = o.ports.map((port) => `http://127.0.0.1:${port}`);
  const http = createHttpBalancer({
    shards: origins.map((origin, i) => ({ id: `shard-${i}`, target: origin })),
    picker: factory(),
    connectionsPerShard: 8,
    retry: { attempts: 6, backoff: { baseMs: 10, maxMs: 200 } },
    health: { baseEjectionMs: 2_000 },
  });
  const total = o.records;
  const failFrom = Math.floor(total * 0.2);
  const failTo = Math.floor(total * 0.4);
  const slowFrom = Math.floor(total * 0.5);
  const shards = o.shards;
  function* records(): Generator<DemoRecord> {
    for (let id = 0; id < total; id++) {
      yield { id, source: 'demo', payload: `record-${id}-${'x'.repeat(64)}` };
    }
  }
  // The cues follow what was written (the source runs ahead of the shards by the batches held):
  // sent without waiting for the answer (the shard process answers in order).
  let cue = 0;
  const cues: [number, () => void][] = [
    [failFrom, () => void shards.ask({ cmd: 'set', shard: o.failIndex, failing: true })],
    [failTo, () => void shards.ask({ cmd: 'set', shard: o.failIndex, failing: false })],
    [slowFrom, () => void shards.ask({ cmd: 'set', shard: o.slowIndex, delayMs: 20 })],
  ];
  const started = systemClock.now();
  const label = `${name} batched`;
  const progress = new Progress(o.out, { picker: label, total, tty: o.tty, startMs: started });
  // Records written per shard, as the ingestion counts them (partial batches and re-sends too).
  const perShard = (written: Record<string, number>) =>
    origins.map((_, i) => written[`shard-${i}`] ?? 0);
  const failedIds = new Set<number>();
  const summary = await http.ingest(records(), {
    path: '/ingest',
    batch: { maxRecords: o.batchSize },
    // Records carry their id: hashing pickers route by it; the others ignore it.
    key: (record) => String(record.id),
    onFailed: (record) => failedIds.add(record.id),
    progressMs: 50,
    onProgress: (p) => {
      while (cue < cues.length && p.written >= cues[cue]![0]) cues[cue++]![1]();
      progress.update(systemClock.now(), () => ({
        written: p.written,
        failed: p.failed,
        inFlight: p.inFlight,
        queued: p.queued,
        retries: p.retries,
        perShard: perShard(p.perShard),
      }));
    },
  });
  const seconds = (systemClock.now() - started) / 1000;
  const { inFlight, queued } = http.stats();
  progress.finish(systemClock.now(), {
    written: summary.written,
    failed: summary.failed,
    inFlight,
    queued,
    retries: summary.retries,
    perShard: perShard(summary.perShard),
  });
  await http.close();
  const collected = await shards.ask({ cmd: 'collect' });
  const received = new Set('ids' in collected ? collected.ids : []);
  let lost = 0;
  for (let id = 0; id < total; id++) if (!received.has(id) && !failedIds.has(id)) lost++;
  return {
    picker: name,
    records: total,
    batchSize: o.batchSize,
    seconds,
    rate: total / seconds,
    batches: summary.batches,
    retries: summary.retries,
    failed: summary.failed,
    lost,
  };
}

/** The batched pass's line, beside the one-record-per-run rate of the same picker. */
export function batchLine(row: BatchRow, oneByOne: number | undefined): string {
  const count = (n: number) => Math.round(n).toLocaleString('en');
  const beside =
    oneByOne === undefined
      ? ''
      : ` (one record per run: ${count(oneByOne)} records/s, ${(row.rate / oneByOne).toFixed(1)}× faster)`;
  return (
    `batched: ${count(row.records)} records in batches of ${row.batchSize} with ${row.picker}: ` +
    `${count(row.rate)} records/s${beside}; ${count(row.batches)} requests, ` +
    `${count(row.retries)} records retried, ${count(row.failed)} failed, ${row.lost} lost`
  );
}
