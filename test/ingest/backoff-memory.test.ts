/**
 * What a refused record holds while it backs off: its own bytes, not the body of the batch it
 * was refused from (with `keepRecords: false` that body is most of an ingestion's memory: a shard
 * refusing one line per 1 MiB batch would otherwise hold a MiB per refused line).
 */
import { describe, expect, it } from 'vitest';
import { Balancer } from '../../src/index.js';
import { Batch } from '../../src/ingest/batch.js';
import { BatchRunner } from '../../src/ingest/batch-runner.js';
import { ndjsonEncoder } from '../../src/ingest/encoders.js';
import { Ledger } from '../../src/ingest/ledger.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

interface Placed {
  record: unknown;
  encoded: Uint8Array | undefined;
}

/** A runner over one shard whose `send` refuses the records at `refuse`; `place` is recorded. */
function setup(refuse: number[]) {
  const clock = new ManualClock();
  const balancer = new Balancer<string>({
    shards: [{ id: 'a', target: 'a' }],
    clock,
    random: seededRandom(1),
  });
  const ledger = new Ledger<unknown>(balancer, {});
  const placed: Placed[] = [];
  const runner = new BatchRunner<string, unknown>({
    runner: balancer,
    ledger,
    idempotent: true,
    field: 'ingest',
    retry: { attempts: 3, baseMs: 1_000, maxMs: 1_000, budget: false },
    send: async () => ({
      failed: refuse.map((index) => ({ index, error: new Error('busy'), retryable: true })),
    }),
    place: (record, _key, _size, _carried, encoded) => placed.push({ record, encoded }),
  });
  return { clock, ledger, runner, placed };
}

/** A batch of `n` records of ~100 bytes, not kept (only their bytes are). */
function batchOf(ledger: Ledger<unknown>, n: number): Batch<unknown> {
  const batch = new Batch<unknown>(false, undefined, undefined, [], ndjsonEncoder(), 64, 0);
  for (let id = 0; id < n; id++) {
    const record = { id, pad: 'x'.repeat(90) };
    ledger.take();
    batch.push(record, batch.encode(record, undefined), undefined, undefined);
  }
  return batch;
}

async function settleAndBackOff(
  clock: ManualClock,
  runner: BatchRunner<string, unknown>,
  batch: Batch<unknown>,
) {
  runner.ship(batch);
  for (let i = 0; i < 10; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
  clock.advance(1_000);
}

describe('a refused record in backoff', () => {
  it('holds a copy of its own bytes, not a view of its batch body', async () => {
    const { clock, ledger, runner, placed } = setup([7]);
    const batch = batchOf(ledger, 1_000);
    const bodyBytes = batch.body().byteLength;
    expect(bodyBytes).toBeGreaterThan(100_000);
    await settleAndBackOff(clock, runner, batch);
    expect(ledger.summary.written).toBe(999);
    expect(placed).toHaveLength(1);
    const encoded = placed[0]!.encoded!;
    expect(JSON.parse(Buffer.from(encoded).toString('utf8'))).toEqual({
      id: 7,
      pad: 'x'.repeat(90),
    });
    // Its own bytes only: the batch's body is not reachable from it.
    expect(encoded.buffer.byteLength).toBe(encoded.byteLength);
    expect(encoded.buffer.byteLength).toBeLessThan(200);
  });

  it('a batch refused whole keeps views of its body (nothing else holds it; no copy made)', async () => {
    const { clock, ledger, runner, placed } = setup([0, 1, 2]);
    const batch = batchOf(ledger, 3);
    await settleAndBackOff(clock, runner, batch);
    expect(placed.map((p) => JSON.parse(Buffer.from(p.encoded!).toString('utf8')).id)).toEqual([
      0, 1, 2,
    ]);
    const buffers = new Set(placed.map((p) => p.encoded!.buffer));
    expect(buffers.size).toBe(1);
  });
});
