/**
 * What a refused record holds while it backs off: its own bytes, not the body of the batch it
 * was refused from (with `keepRecords: false` that body is most of an ingestion's memory: a shard
 * refusing one line per 1 MiB batch would otherwise hold a MiB per refused line).
 */
import { describe, expect, it } from 'vitest';
import { Accumulator } from '../../src/ingest/accumulator.js';
import { ndjsonEncoder } from '../../src/ingest/encoders.js';
import { Ledger } from '../../src/ingest/ledger.js';
import { Sender } from '../../src/ingest/sender.js';
import { flush, makeBalancer, shardsOf } from '../helpers.js';

/** A sender over one shard whose `send` refuses the records at `refuse` of its first batch. */
function setup(refuse: number[]) {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(['a']),
    // Full jitter of a 1 s backoff at one half: 500 ms.
    random: () => 0.5,
  });
  const ledger = new Ledger<unknown>(balancer, {});
  const acc = new Accumulator<unknown>(
    {
      maxRecords: 10_000,
      maxRecordBytes: 10_000_000,
      lingerMs: 50,
      encoder: ndjsonEncoder(),
      maxCapacity: 10_000_000,
      keepRecords: false,
      deliveryTimeoutMs: 120_000,
    },
    clock,
  );
  let sends = 0;
  const sender = new Sender<string, unknown>(balancer, ledger, acc, {
    field: 'ingest',
    idempotent: true,
    runRetry: undefined,
    recordRetry: { attempts: 3, baseMs: 1_000, maxMs: 1_000, budget: false },
    deliveryTimeoutMs: 120_000,
    ordered: false,
    send: async () =>
      sends++ === 0
        ? { failed: refuse.map((index) => ({ index, error: new Error('busy'), retryable: true })) }
        : undefined,
  });
  return { clock, ledger, acc, sender };
}

/** `n` records of ~100 bytes in the unkeyed home's batch, closed. */
function fill(acc: Accumulator<unknown>, ledger: Ledger<unknown>, n: number): number {
  const home = acc.home(undefined);
  for (let id = 0; id < n; id++) {
    ledger.take();
    acc.place(
      home,
      { id, pad: 'x'.repeat(90) },
      undefined,
      -1,
      undefined,
      undefined,
      Number.POSITIVE_INFINITY,
    );
  }
  const bytes = home.open!.body().byteLength;
  acc.flush(home);
  return bytes;
}

describe('a refused record in backoff', () => {
  it('holds a copy of its own bytes, not a view of its batch body', async () => {
    const { ledger, acc, sender } = setup([7]);
    expect(fill(acc, ledger, 1_000)).toBeGreaterThan(100_000);
    sender.pump();
    await flush();
    expect(ledger.summary.written).toBe(999);
    const waiting = acc.home(undefined).ready;
    expect(waiting).toHaveLength(1);
    const retry = waiting[0]!;
    expect(retry.count).toBe(1);
    expect(JSON.parse(retry.body().toString('utf8'))).toEqual({ id: 7, pad: 'x'.repeat(90) });
    // Its own bytes only: the first batch's body is not reachable from it.
    expect(retry.out!.buf.byteLength).toBeLessThan(400);
    sender.stop();
  });

  it('goes again after its backoff (full jitter), and is written then', async () => {
    const { clock, ledger, acc, sender } = setup([0, 1, 2]);
    fill(acc, ledger, 3);
    sender.pump();
    await flush();
    expect(ledger.summary.written).toBe(0);
    expect(acc.home(undefined).ready[0]!.count).toBe(3);
    clock.advance(499);
    await flush();
    expect(ledger.summary.written).toBe(0);
    clock.advance(1);
    await flush();
    expect(ledger.summary.written).toBe(3);
    expect(ledger.summary.retries).toBe(3);
    expect(ledger.held).toBe(0);
  });
});
