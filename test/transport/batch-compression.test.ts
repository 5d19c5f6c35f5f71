/**
 * A batch's body compressed once: readied before its run, kept for every attempt, made again only
 * when the batch's records changed — and never kept when they changed while it was compressed
 * (an attempt cut off mid-compression, followed by one that dropped records).
 */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Batch } from '../../src/ingest/batch.js';
import { ndjsonEncoder } from '../../src/ingest/encoders.js';
import { BatchCompression } from '../../src/transport/batch-compression.js';
import { type Compressed, createCompressor } from '../../src/transport/compression.js';

interface Row {
  id: number;
  msg: string;
}

/** A closed NDJSON batch of `n` ~100-byte records, as the accumulator builds it. */
function batchOf(n: number): Batch<Row> {
  const batch = new Batch<Row>(true, undefined, undefined, [], ndjsonEncoder<Row>(), 1024, 0);
  for (let id = 0; id < n; id++) {
    const row = { id, msg: `request ${id} served by web-${id % 17} in ${(id * 7) % 300} ms` };
    const size = batch.encode(row, undefined);
    batch.push(row, size, undefined, undefined, Number.POSITIVE_INFINITY, -1);
  }
  return batch;
}

function ndjson(rows: readonly Row[]): string {
  return rows.map((r) => `${JSON.stringify(r)}\n`).join('');
}

function gunzip(c: Compressed): string {
  expect(c.encoding).toBe('gzip');
  return zlib.gunzipSync(c.body as Uint8Array).toString();
}

describe('BatchCompression', () => {
  it('readies a batch once; every later body() is the same bytes', async () => {
    let calls = 0;
    const compression = new BatchCompression<Row>(createCompressor('gzip'), (b) => {
      calls++;
      return b.body();
    });
    const batch = batchOf(200);
    await compression.prepare(batch);
    expect(compression.prepare(batch)).toBeUndefined();
    const first = await compression.body(batch);
    const again = await compression.body(batch);
    expect(again).toBe(first);
    expect(calls).toBe(1);
    expect(gunzip(first)).toBe(ndjson(batch.records));
    expect(first.rawBytes).toBe(batch.body().byteLength);
  });

  it('records that leave the batch make its body again, of the records left', async () => {
    const compression = new BatchCompression<Row>(createCompressor('gzip'), (b) => b.body());
    const batch = batchOf(200);
    await compression.prepare(batch);
    const before = await compression.body(batch);
    batch.retain((i) => i % 3 !== 0);
    expect(batch.prepared).toBeUndefined();
    const after = await compression.body(batch);
    expect(after).not.toBe(before);
    expect(gunzip(after)).toBe(ndjson(batch.records));
    expect(batch.records).toHaveLength(133);
  });

  it('bytes compressed while the records changed are not kept as the batch’s body', async () => {
    const compression = new BatchCompression<Row>(createCompressor('gzip'), (b) => b.body());
    const batch = batchOf(200);
    const stale = compression.body(batch);
    // Meanwhile (the attempt that asked was cut off), the next attempt dropped records.
    batch.retain((i) => i >= 100);
    await stale;
    expect(batch.prepared).toBeUndefined();
    expect(gunzip(await compression.body(batch))).toBe(ndjson(batch.records));
  });

  it('below minBytes the body goes as it is; minBytes 0 compresses it all the same', async () => {
    const compression = new BatchCompression<Row>(createCompressor('gzip'), (b) => b.body());
    const batch = batchOf(3);
    const plain = await compression.body(batch);
    expect(plain.encoding).toBeUndefined();
    expect(Buffer.from(plain.body as Uint8Array).toString()).toBe(ndjson(batch.records));
    const forced = await compression.body(batch, 0);
    expect(gunzip(forced)).toBe(ndjson(batch.records));
    // Once compressed, the compressed body is the one kept.
    expect(await compression.body(batch, 0)).toBe(forced);
  });
});
