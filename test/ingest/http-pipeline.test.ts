/**
 * `pipeline(Readable.from(records), balancer.createWriteStream(...))` against four real HTTP
 * shards on 127.0.0.1: every record arrives, the balancer's queue bounds memory, `finish` waits
 * for every send to settle, and a failed record fails the pipeline (never swallowed).
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Balancer, isShardwiseError, WriteFailedError } from '../../src/index.js';
import { pools, startWorkerShards, type WorkerShards } from './shards.js';

interface Rec {
  id: number;
}

function* records(n: number): Generator<Rec> {
  for (let id = 0; id < n; id++) yield { id };
}

describe('createWriteStream over real HTTP shards', () => {
  let shards: WorkerShards;
  let http: ReturnType<typeof pools>;

  beforeAll(async () => {
    shards = await startWorkerShards(4);
    http = pools(shards.origins);
  });
  afterAll(async () => {
    await http.close();
    await shards.close();
  });

  it('delivers 100,000 records, holds at most maxQueued, and finishes after all settled', async () => {
    const total = 100_000;
    const maxQueued = 256;
    const balancer = new Balancer<string>({
      shards: shards.origins.map((origin, i) => ({ id: `shard-${i}`, target: origin })),
      maxInFlightPerShard: 8,
      maxQueued,
    });
    let peakQueued = 0;
    let settledSends = 0;
    let settledAtFinish = -1;
    let inFlightAtFinish = -1;
    const stream = balancer.createWriteStream<Rec>({
      async send(shard, record, { signal }) {
        const { queued } = balancer.stats();
        if (queued > peakQueued) peakQueued = queued;
        try {
          await http.post(shard.target, String(record.id), signal);
        } finally {
          settledSends++;
        }
      },
      key: (record) => String(record.id),
    });
    stream.on('finish', () => {
      settledAtFinish = settledSends;
      inFlightAtFinish = balancer.stats().inFlight;
    });
    // Sample between sends too: the queue is what grows while shards are busy.
    const sampler = setInterval(() => {
      const { queued } = balancer.stats();
      if (queued > peakQueued) peakQueued = queued;
    }, 5);

    await pipeline(Readable.from(records(total)), stream);
    clearInterval(sampler);

    const received = await shards.collect();
    const ids = new Set(received.flat());
    expect(ids.size).toBe(total);
    expect(received.flat().length).toBe(total); // none twice
    expect(peakQueued).toBeGreaterThan(0); // the queue was used: backpressure was exercised
    expect(peakQueued).toBeLessThanOrEqual(maxQueued);
    expect(settledAtFinish).toBe(total);
    expect(inFlightAtFinish).toBe(0);
    for (const ids of received) expect(ids.length).toBeGreaterThan(total / 10);
    const stats = balancer.stats();
    expect(stats.completed).toBe(total);
    expect(stats.failed).toBe(0);
    await balancer.close();
  }, 60_000);

  it('rejects the pipeline with WriteFailedError { record, cause } when record #500 fails', async () => {
    const balancer = new Balancer<string>({
      shards: shards.origins.map((origin, i) => ({ id: `shard-${i}`, target: origin })),
      maxInFlightPerShard: 4,
      maxQueued: 32,
    });
    const cause = Object.assign(new Error('record 500 is malformed'), { retryable: false });
    const all = [...records(5_000)];
    let sendsOf500 = 0;
    const stream = balancer.createWriteStream<Rec>({
      async send(shard, record, { signal }) {
        if (record.id === 500) {
          sendsOf500++;
          throw cause;
        }
        await http.post(shard.target, String(record.id), signal);
      },
    });
    const error = await pipeline(Readable.from(all), stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WriteFailedError);
    expect(isShardwiseError(error, 'SHARDWISE_WRITE_FAILED')).toBe(true);
    const failed = error as WriteFailedError;
    expect(failed.record).toBe(all[500]);
    expect(failed.cause).toBe(cause);
    expect(failed.message).toContain('record 500 is malformed');
    expect(sendsOf500).toBe(1); // not retryable: sent once
    expect(stream.destroyed).toBe(true);
    // The stream stopped reading soon after: far from every record was admitted.
    await balancer.drain();
    expect(balancer.stats().completed + balancer.stats().failed).toBeLessThan(all.length);
    await balancer.close();
  });
});
