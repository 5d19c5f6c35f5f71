/**
 * Batch bodies: NDJSON (each record and a newline) and JSON arrays, written record by record into
 * one buffer; strings and bytes pass through untouched (a pre-encoded line is not encoded again);
 * multi-byte UTF-8 is measured in bytes, not characters; records taken out of a batch leave it
 * (and its body) whole.
 */
import { describe, expect, it } from 'vitest';
import { Batch } from '../../src/ingest/batch.js';
import { ByteBuffer, writeSafeInteger } from '../../src/ingest/bytes.js';
import {
  jsonArrayEncoder,
  ndjsonEncoder,
  ndjsonSize,
  type RecordEncoder,
} from '../../src/ingest/encoders.js';

/** A batch of `records`, encoded as they are placed. */
function batchOf(encoder: RecordEncoder<unknown>, records: unknown[], keep = true): Batch<unknown> {
  const batch = new Batch<unknown>(keep, undefined, undefined, [], encoder, 16, 0);
  for (const record of records) {
    const size = batch.encode(record, undefined);
    batch.push(record, size, undefined, undefined, Number.POSITIVE_INFINITY, -1);
  }
  return batch;
}

const mixed = [
  { id: 1, city: 'Zürich' },
  '{"id":2,"pre":"encoded"}',
  Buffer.from('{"id":3,"bytes":true}'),
  { id: 4, emoji: '😀', quote: '"' },
  new Uint8Array(Buffer.from('{"id":5}')),
];

describe('batch bodies', () => {
  it('NDJSON: each record then a newline; pre-encoded records as they are', () => {
    const batch = batchOf(ndjsonEncoder(), mixed);
    const body = batch.body();
    expect(body.toString('utf8')).toBe(
      '{"id":1,"city":"Zürich"}\n{"id":2,"pre":"encoded"}\n{"id":3,"bytes":true}\n' +
        '{"id":4,"emoji":"😀","quote":"\\""}\n{"id":5}\n',
    );
    expect(body.byteLength).toBe(batch.bytes); // sizes are the bytes, newline included
    expect(ndjsonEncoder().contentType).toBe('application/x-ndjson');
  });

  it('JSON: an array of the records', () => {
    const batch = batchOf(jsonArrayEncoder(), mixed);
    const body = batch.body();
    expect(JSON.parse(body.toString('utf8')).map((r: { id: number }) => r.id)).toEqual([
      1, 2, 3, 4, 5,
    ]);
    // The sizes (each record and its comma) plus the brackets, less one comma.
    expect(body.byteLength).toBe(batch.bytes + 1);
    expect(batch.body()).toBe(body); // kept for retries
    expect(jsonArrayEncoder().contentType).toBe('application/json');
  });

  it('writes the same bytes as JSON.stringify, through growth of the buffer', () => {
    const records = Array.from({ length: 300 }, (_, i) => ({
      i,
      text: i % 7 === 0 ? `ünïcødé ${i}` : `plain ${i}`,
      big: 2 ** 40 + i,
      neg: -i,
      frac: i / 3,
      flag: i % 2 === 0,
      none: null,
      list: [i, `${i}`],
    }));
    const body = batchOf(ndjsonEncoder(), records).body();
    expect(body.toString('utf8')).toBe(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  });

  it('takes records out of a batch and rebuilds its body', () => {
    const batch = batchOf(jsonArrayEncoder(), [{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(batch.body().toString()).toBe('[{"id":1},{"id":2},{"id":3}]');
    const second = Buffer.from(batch.encodedAt(1)!).toString();
    expect(second).toBe('{"id":2}');
    expect(batch.retain((i) => i !== 1)).toBe(1);
    expect(batch.body().toString()).toBe('[{"id":1},{"id":3}]');
    expect(batch.bytes).toBe(18);
  });

  it('takes back the last encoding whole (a record moving to the next batch)', () => {
    const batch = batchOf(jsonArrayEncoder(), [{ id: 1 }]);
    batch.encode({ id: 22 }, undefined);
    expect(Buffer.from(batch.unwrite()).toString()).toBe('{"id":22}');
    expect(batch.body().toString()).toBe('[{"id":1}]');
  });

  it('leaves nothing of a record it cannot encode', () => {
    const batch = batchOf(ndjsonEncoder(), [{ id: 1 }]);
    expect(() => batch.encode({ id: 2n }, undefined)).toThrow(TypeError);
    expect(() => batch.encode(undefined, undefined)).toThrow(/must be JSON-encodable/);
    expect(batch.body().toString()).toBe('{"id":1}\n');
  });

  it('without keepRecords, gives records back decoded from their bytes', () => {
    const text = 'a line, as read: ünïcødé';
    const bytes = Buffer.from('{"raw":true}');
    const object = { id: 9, at: new Date(0), nested: { a: [1, 'b'] } };
    const batch = batchOf(jsonArrayEncoder(), [text, bytes, object], false);
    expect(batch.recordAt(0)).toBe(text);
    expect(batch.recordAt(1)).toEqual(bytes);
    expect(batch.recordAt(1)).not.toBe(bytes);
    expect(batch.recordAt(2)).toEqual(JSON.parse(JSON.stringify(object)));
    expect(batch.decodedRecords()).toHaveLength(3);
    // Nothing of the records is held but their bytes.
    expect(batch.records.some((r) => r === text || r === bytes || r === object)).toBe(false);
  });

  it('passes a Buffer record through byte for byte', () => {
    const raw = Buffer.from([0x7b, 0x22, 0xc3, 0xa9, 0x22, 0x3a, 0x31, 0x7d]); // {"é":1}
    expect(batchOf(ndjsonEncoder(), [raw]).body()).toEqual(Buffer.concat([raw, Buffer.from('\n')]));
  });

  it('the core default size is the NDJSON line in bytes', () => {
    const size = ndjsonSize();
    expect(size({ city: 'Zürich' })).toBe(Buffer.byteLength('{"city":"Zürich"}') + 1);
    expect(size('é')).toBe(3);
    expect(size(new Uint8Array(10))).toBe(11);
    expect(() => size(undefined)).toThrow(TypeError);
  });

  it('writes safe integers as their decimal digits', () => {
    const out = new ByteBuffer(64);
    for (const v of [0, -0, 7, -7, 99_999_999, 100_000_000, 2 ** 31, -(2 ** 53 - 1), 2 ** 53 - 1]) {
      const end = writeSafeInteger(out.buf, 0, v);
      expect(out.buf.toString('latin1', 0, end)).toBe(String(v));
    }
  });
});
