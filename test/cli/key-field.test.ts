/**
 * `--key FIELD` reads the key from the line itself, without parsing it whole: it must agree with
 * `JSON.parse` on every JSON object — nested paths, escapes, numbers written any way JSON allows —
 * and refuse, with a message that quotes nothing of the record, what has no key to route by.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyFieldError, keyField } from '../../src/cli/key-field.js';

/** The key as a parsed record gives it, or the error's kind. */
function parsedKey(line: string, path: string[]): string | 'refused' {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'refused';
  }
  for (const name of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'refused';
    if (!Object.hasOwn(value, name)) return 'refused';
    value = (value as Record<string, unknown>)[name];
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return 'refused';
}

function scannedKey(line: string, field: string): string | 'refused' {
  try {
    return keyField(field)(line);
  } catch (error) {
    expect(error).toBeInstanceOf(KeyFieldError);
    return 'refused';
  }
}

const names = fc.constantFrom('id', 'user', 'a', 'tenant', 'x"y', 'é', 'k\\1', '');

describe('keyField', () => {
  it('reads strings and numbers, at the top or nested, as JSON.parse gives them', () => {
    const key = keyField('tenant');
    expect(key('{"id":1,"tenant":"acme","msg":"x"}')).toBe('acme');
    expect(key(' { "tenant" : 42 } ')).toBe('42');
    expect(key('{"tenant":1.50}')).toBe('1.5');
    expect(key('{"tenant":-1e2}')).toBe('-100');
    expect(key('{"skip":{"tenant":"inner"},"tenant":"outer"}')).toBe('outer');
    expect(key('{"skip":["}",{"a":"]"}],"tenant":"after"}')).toBe('after');
    expect(key('{"\\u0074enant":"escaped key"}')).toBe('escaped key');
    expect(key('{"tenant":"a\\"b\\u00e9"}')).toBe('a"bé');
    expect(keyField('user.id')('{"user":{"name":"n","id":"u-7"}}')).toBe('u-7');
    expect(key(Buffer.from('{"tenant":"bytes"}'))).toBe('bytes');
    expect(key({ tenant: 'object' })).toBe('object');
    expect(keyField('user.id')({ user: { id: 9 } })).toBe('9');
  });

  it('refuses what has no key, and says why without quoting the record', () => {
    const key = keyField('tenant');
    const cases: [unknown, string][] = [
      ['{"id":1,"secret":"hunter2"}', 'has no "tenant" field'],
      ['{"tenant":true,"secret":"hunter2"}', 'is true, false or null'],
      ['{"tenant":null}', 'is true, false or null'],
      ['{"tenant":{"secret":"hunter2"}}', 'is an object'],
      ['{"tenant":["hunter2"]}', 'is an array'],
      ['hunter2', 'is not a JSON object'],
      ['["hunter2"]', 'is not a JSON object'],
      ['{"tenant":hunter2}', 'is not a JSON object'],
      ['{"tenant":"hunter2', 'is not a JSON object'],
      ['{"tenant":0x1f}', 'is not a JSON object'],
      [{ tenant: false }, 'is a boolean'],
      [{ other: 1 }, 'has no "tenant" field'],
    ];
    for (const [record, why] of cases) {
      let error: unknown;
      try {
        key(record);
      } catch (e) {
        error = e;
      }
      expect(error, String(record)).toBeInstanceOf(KeyFieldError);
      expect((error as Error).message).toContain(why);
      expect((error as Error).message).not.toContain('hunter2');
    }
    expect(() => keyField('user.id')('{"user":"u-7"}')).toThrow('has no "user.id" field');
  });

  it('agrees with JSON.parse on any JSON object, for any path', () => {
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.string(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(names, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    const record = fc.dictionary(names, value, { maxKeys: 5 });
    fc.assert(
      fc.property(
        record,
        fc.array(
          names.filter((n) => n !== '' && !n.includes('.')),
          { minLength: 1, maxLength: 2 },
        ),
        fc.constantFrom(0, 2),
        (object, path, indent) => {
          const line = JSON.stringify(object, null, indent).replace(/\n/g, ' ');
          expect(scannedKey(line, path.join('.'))).toBe(parsedKey(line, path));
        },
      ),
      { numRuns: 3000, seed: 32 },
    );
  });
});
