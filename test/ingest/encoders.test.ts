/**
 * Batch bodies: NDJSON (each record and a newline) and JSON arrays, built in one buffer of
 * exactly the measured length; strings and bytes pass through untouched (a pre-encoded line is
 * not encoded again); multi-byte UTF-8 is measured in bytes, not characters.
 */
import { describe, expect, it } from 'vitest';
import { Batch } from '../../src/ingest/batch.js';
import {
  chunkBytes,
  jsonArrayEncoder,
  ndjsonEncoder,
  ndjsonSize,
  type RecordEncoder,
} from '../../src/ingest/encoders.js';

/** A batch of `records`, encoded as `encoder` would as they are taken. */
function batchOf(encoder: RecordEncoder<unknown>, records: unknown[]): Batch<unknown> {
  const batch = new Batch<unknown>(undefined, undefined, [], true, 0);
  for (const record of records) {
    const chunk = encoder.encode(record);
    const length = chunkBytes(chunk) + encoder.separator.length;
    batch.push(record, length, chunk, length, undefined, undefined);
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
    const encoder = ndjsonEncoder<unknown>();
    const body = batchOf(encoder, mixed).body(encoder);
    expect(body.toString('utf8')).toBe(
      '{"id":1,"city":"Zürich"}\n{"id":2,"pre":"encoded"}\n{"id":3,"bytes":true}\n' +
        '{"id":4,"emoji":"😀","quote":"\\""}\n{"id":5}\n',
    );
    const lines = body.toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l).id)).toEqual([1, 2, 3, 4, 5]);
    expect(encoder.contentType).toBe('application/x-ndjson');
  });

  it('JSON: an array of the records', () => {
    const encoder = jsonArrayEncoder<unknown>();
    const batch = batchOf(encoder, mixed);
    const body = batch.body(encoder);
    expect(JSON.parse(body.toString('utf8')).map((r: { id: number }) => r.id)).toEqual([
      1, 2, 3, 4, 5,
    ]);
    // The sizes (each record and its comma) plus the brackets, less the last comma.
    expect(body.byteLength).toBe(batch.bytes + 1);
    expect(encoder.contentType).toBe('application/json');
  });

  it('an all-text batch is joined in one piece, with the same bytes', () => {
    const encoder = ndjsonEncoder<unknown>();
    const text = [{ a: 'é' }, 'line two', { b: [1, 2] }];
    const body = batchOf(encoder, text).body(encoder);
    expect(body.toString('utf8')).toBe('{"a":"é"}\nline two\n{"b":[1,2]}\n');
    expect(body.byteLength).toBe(Buffer.byteLength('{"a":"é"}\nline two\n{"b":[1,2]}\n'));
  });

  it('rebuilds the body after records leave the batch', () => {
    const encoder = jsonArrayEncoder<unknown>();
    const batch = batchOf(encoder, [{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(batch.body(encoder).toString()).toBe('[{"id":1},{"id":2},{"id":3}]');
    expect(batch.retain((i) => i !== 1)).toBe(1);
    expect(batch.body(encoder).toString()).toBe('[{"id":1},{"id":3}]');
  });

  it('passes a Buffer record through untouched (no copy of its meaning, byte for byte)', () => {
    const encoder = ndjsonEncoder<unknown>();
    const raw = Buffer.from([0x7b, 0x22, 0xc3, 0xa9, 0x22, 0x3a, 0x31, 0x7d]); // {"é":1}
    expect(encoder.encode(raw)).toBe(raw);
    expect(batchOf(encoder, [raw]).body(encoder)).toEqual(Buffer.concat([raw, Buffer.from('\n')]));
  });

  it('the core default size is the NDJSON line in bytes', () => {
    const size = ndjsonSize();
    expect(size({ city: 'Zürich' })).toBe(Buffer.byteLength('{"city":"Zürich"}') + 1);
    expect(size('é')).toBe(3);
    expect(size(new Uint8Array(10))).toBe(11);
    expect(() => size(undefined)).toThrow(TypeError);
  });
});
