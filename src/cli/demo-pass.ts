/**
 * One pass of the demo: every record sent as its own POST through the HTTP balancer with one
 * picker, while the shards misbehave on cue (one fails for a while, one turns slow), then checked
 * against what the shards received: a record neither received nor reported failed is lost.
 */

import { systemClock } from '../base/runtime.js';
import type { Picker } from '../base/types.js';
import { createHttpBalancer } from '../http/index.js';
import { quantile } from '../testing/summary.js';
import type { Row } from './demo-report.js';
import type { DemoShards } from './demo-shards.js';
import { Progress } from './progress.js';

/** The setting every pass shares. */
export interface PassSetting {
  ports: readonly number[];
  shards: DemoShards;
  records: number;
  concurrency: number;
  /** The shard that turns slow at 50 % of the records. */
  slowIndex: number;
  /** The shard that answers 503 from 20 % to 40 % of the records. */
  failIndex: number;
  tty: boolean;
  out: NodeJS.WritableStream;
}

/** Sends `records` records one request each with `factory`'s picker; resolves the pass's row. */
export async function recordPass(
  name: string,
  factory: () => Picker,
  o: PassSetting,
): Promise<Row> {
  const origins = o.ports.map((port) => `http://127.0.0.1:${port}`);
  const slowId = `shard-${o.slowIndex}`;
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
  const perShard = new Array<number>(origins.length).fill(0);
  let written = 0;
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
    perShard[Number(shardId.slice('shard-'.length))]!++;
  });
  balancer.on('pick', ({ shardId }) => {
    if (!slowPhase) return;
    slowTotal++;
    if (shardId === slowId) slowSent++;
  });
  const started = systemClock.now();
  const progress = new Progress(o.out, {
    picker: name,
    total: o.records,
    tty: o.tty,
    startMs: started,
  });
  const figures = () => {
    const { inFlight, queued } = balancer.stats();
    return { written, failed, inFlight, queued, retries, perShard };
  };
  const failFrom = Math.floor(o.records * 0.2);
  const failTo = Math.floor(o.records * 0.4);
  const slowFrom = Math.floor(o.records * 0.5);
  for (let i = 0; i < o.records; i++) {
    if (i === failFrom) await o.shards.ask({ cmd: 'set', shard: o.failIndex, failing: true });
    if (i === failTo) await o.shards.ask({ cmd: 'set', shard: o.failIndex, failing: false });
    if (i === slowFrom) {
      await o.shards.ask({ cmd: 'set', shard: o.slowIndex, delayMs: 20 });
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
        // The record's id: hashing pickers route by it; the others ignore it.
        key: String(i),
        idempotent: true,
      })
      .then(
        () => {
          latencies[i] = systemClock.now() - t0;
          written++;
          progress.update(systemClock.now(), figures);
        },
        () => {
          latencies[i] = systemClock.now() - t0;
          failed++;
          failedIds.add(i);
        },
      );
  }
  await balancer.drain();
  const seconds = (systemClock.now() - started) / 1000;
  progress.finish(systemClock.now(), figures());
  const ejections = balancer.stats().shards.reduce((sum, s) => sum + s.ejections, 0);
  await balancer.close();
  const collected = await o.shards.ask({ cmd: 'collect' });
  const received = new Set('ids' in collected ? collected.ids : []);
  let lost = 0;
  for (let i = 0; i < o.records; i++) if (!received.has(i) && !failedIds.has(i)) lost++;
  const sorted = latencies.sort();
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
