/**
 * The shape-compiled JSON encoder gives exactly `JSON.stringify`'s text, for any value: records
 * of a learned shape, records that differ from it in any way (a key more or less, another order,
 * `undefined`, a `Date`, a class instance, `toJSON`), strings that need escaping, odd numbers —
 * and throws where `JSON.stringify` throws or gives nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shapeStringifier } from '../../src/ingest/json-shape.js';

/** `stringify(value)` and `JSON.stringify(value)` agree: same text, or both throw. */
function agrees(stringify: (v: unknown) => string, value: unknown): void {
  let expected: string | undefined;
  let expectedThrow = false;
  try {
    expected = JSON.stringify(value);
  } catch {
    expectedThrow = true;
  }
  if (expectedThrow || expected === undefined) {
    expect(() => stringify(value)).toThrow(TypeError);
    return;
  }
  expect(stringify(value)).toBe(expected);
}

const oddString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }), // lone surrogates among them
  fc.constantFrom('"', '\\', '\n', '\u2028', '\ud800', 'é', '😀', '</script>', '\u0000'),
);
const scalar = fc.oneof(
  oddString,
  fc.double(), // NaN, ±Infinity, -0 included
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.date(),
);
const value = fc.oneof(
  { depthSize: 'small' },
  scalar,
  fc.array(scalar, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), scalar, { maxKeys: 3 }),
);

describe('shapeStringifier', () => {
  it('matches JSON.stringify on records sharing a shape, and on every kind of value in it', () => {
    const shape = fc.record({
      id: fc.integer(),
      name: oddString,
      score: value,
      tags: value,
      ok: value,
    });
    fc.assert(
      fc.property(fc.array(shape, { minLength: 1, maxLength: 60 }), (recs) => {
        const stringify = shapeStringifier();
        for (const r of recs) agrees(stringify, r);
      }),
      { numRuns: 300 },
    );
  });

  it('matches JSON.stringify when the shape changes between records', () => {
    const anyRecord = fc.oneof(
      fc.record({ id: fc.integer(), name: oddString }),
      fc.record({ name: oddString, id: fc.integer() }), // the same keys, another order
      fc.record({ id: fc.integer(), name: oddString, extra: value }),
      fc.record({ id: fc.integer() }),
      fc.dictionary(fc.string({ maxLength: 3 }), value, { maxKeys: 4 }),
      value,
    );
    fc.assert(
      fc.property(fc.array(anyRecord, { maxLength: 80 }), (recs) => {
        const stringify = shapeStringifier();
        for (const r of recs) agrees(stringify, r);
      }),
      { numRuns: 300 },
    );
  });

  it('is not fooled by what the shape check must catch', () => {
    const stringify = shapeStringifier();
    const learned = { id: 1, name: 'a' };
    agrees(stringify, learned);
    agrees(stringify, { id: 2, name: 'b' }); // through the compiled shape
    class Row {
      id = 3;
      name = 'c';
    }
    const cases: unknown[] = [
      new Row(),
      Object.assign(Object.create(null), { id: 4, name: 'd' }),
      { id: 5, name: 'e', toJSON: () => 'custom' },
      Object.assign(Object.create({ toJSON: () => 'inherited' }), { id: 6, name: 'f' }),
      { id: 7, name: undefined },
      { id: 8, name: () => 'fn' },
      { id: 9, name: Symbol('s') },
      { id: 10, name: new Date(0) },
      { id: 11, name: { toJSON: (key: string) => `key:${key}` } },
      { id: 12n, name: 'big' },
      { id: Number.NaN, name: -0 },
      { id: [1, { a: undefined }], name: { nested: ['x', null] } },
      JSON.parse('{"id": 13, "name": "g", "__proto__": 1}'),
      Object.defineProperty({ id: 14, name: 'h' }, 'hidden', { value: 1, enumerable: false }),
      { id: 15, name: 'i', [Symbol('k')]: 1 },
      ['id', 'name'],
      { 1: 'x', id: 16, name: 'j' },
    ];
    for (const c of cases) agrees(stringify, c);
    const cyclic: Record<string, unknown> = { id: 17 };
    cyclic.name = cyclic;
    agrees(stringify, cyclic);
  });

  it('throws a TypeError for what has no JSON text', () => {
    const stringify = shapeStringifier();
    expect(() => stringify(undefined)).toThrow(/must be JSON-encodable, got undefined/);
    expect(() => stringify(() => 1)).toThrow(/got function/);
  });
});
