/**
 * Open batches are sized by what their own home's batches hold, never by the last full batch of
 * another home: many homes with a few records each reserve little.
 */
import { describe, expect, it } from 'vitest';
import { Accumulator } from '../../src/ingest/accumulator.js';
import { ndjsonEncoder } from '../../src/ingest/encoders.js';
import { ManualClock } from '../../src/testing/index.js';

describe('an open batch', () => {
  it('of a home that trickles reserves little, however full another home’s batches are', () => {
    const acc = new Accumulator<unknown>(
      {
        maxRecords: 1_000,
        maxRecordBytes: 1024 * 1024,
        lingerMs: 50,
        encoder: ndjsonEncoder(),
        maxCapacity: 1024 * 1024 + 64,
        keepRecords: true,
        deliveryTimeoutMs: 120_000,
      },
      new ManualClock(),
    );
    // One hot home fills a 1 MiB batch (≈ 1 KiB records).
    const hot = acc.home('hot');
    for (let i = 0; i < 1_000; i++) {
      acc.place(
        hot,
        { i, pad: 'x'.repeat(1_000) },
        'k',
        -1,
        undefined,
        undefined,
        Number.POSITIVE_INFINITY,
      );
    }
    expect(hot.ready.length).toBeGreaterThan(0);
    // 256 cold homes get one small record each: their open batches hold ~40 bytes each.
    let reserved = 0;
    for (let h = 0; h < 256; h++) {
      const cold = acc.home(`cold-${h}`);
      acc.place(cold, { h }, 'k', -1, undefined, undefined, Number.POSITIVE_INFINITY);
      reserved += cold.open!.out!.buf.byteLength;
    }
    // 16 KiB a first batch at most: 4 MiB in all, not 256 MiB.
    expect(reserved).toBeLessThanOrEqual(256 * 16 * 1024);
    // The hot home's next batch starts near its own last size (it fills them).
    acc.place(
      hot,
      { i: -1, pad: 'x'.repeat(1_000) },
      'k',
      -1,
      undefined,
      undefined,
      Number.POSITIVE_INFINITY,
    );
    expect(hot.open!.out!.buf.byteLength).toBeGreaterThan(512 * 1024);
  });

  it('of a home whose batches were small starts small again', () => {
    const acc = new Accumulator<unknown>(
      {
        maxRecords: 2,
        maxRecordBytes: 1024 * 1024,
        lingerMs: 50,
        encoder: ndjsonEncoder(),
        maxCapacity: 1024 * 1024 + 64,
        keepRecords: true,
        deliveryTimeoutMs: 120_000,
      },
      new ManualClock(),
    );
    const home = acc.home('a');
    for (let i = 0; i < 4; i++)
      acc.place(home, { i }, 'k', -1, undefined, undefined, Number.POSITIVE_INFINITY);
    acc.place(home, { i: 5 }, 'k', -1, undefined, undefined, Number.POSITIVE_INFINITY);
    expect(home.open!.out!.buf.byteLength).toBeLessThan(256);
  });
});
