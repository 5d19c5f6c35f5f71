/**
 * Bad input shapes for the public entries: values that are not what a slot takes, in the shapes
 * careless callers produce (holes, a `Map` or a `Date` where an options bag goes, `null`, a
 * number where an object goes), and the check that each ends in a `ConfigError` naming the field
 * — thrown or rejected, never a raw `TypeError` from deep inside.
 */
import { expect } from 'vitest';
import { ConfigError } from '../../src/index.js';

/** A class instance: an object, but not an options bag. */
class Settings {
  shards = [{ id: 'a', target: 0 }];
  timeoutMs = 10;
}

/** A sparse array: index 0 is a hole (`[, x]`). */
export function sparse<T>(value: T): T[] {
  const out: T[] = [];
  out[1] = value;
  return out;
}

/** A sparse array with a hole in the middle (`[x, , x]`). */
export function holeInTheMiddle<T>(value: T): T[] {
  const out: T[] = [value];
  out[2] = value;
  return out;
}

/** Shapes that are never an options bag. */
export function notABag(): [string, unknown][] {
  return [
    ['null', null],
    ['a number', 42],
    ['a string', 'options'],
    ['a boolean', true],
    ['a Map', new Map<string, unknown>([['timeoutMs', 10]])],
    ['a Date', new Date(0)],
    ['a class instance', new Settings()],
    ['an array', [{ id: 'a', target: 0 }]],
    ['a sparse array', sparse({ id: 'a', target: 0 })],
    ['a function', () => ({})],
  ];
}

/** Shapes that are never a list of specs (objects expected inside a dense array). */
export function notAList(spec: unknown): [string, unknown][] {
  return [
    ['null', null],
    ['a number', 3],
    ['a string', 'a,b'],
    ['a Map', new Map([['a', spec]])],
    ['a Set', new Set([spec])],
    ['an object', { 0: spec, length: 1 }],
    ['a hole first', sparse(spec)],
    ['a hole in the middle', holeInTheMiddle(spec)],
    ['null inside', [spec, null]],
    ['a number inside', [42]],
    ['a Map inside', [new Map([['id', 'a']])]],
    ['a Date inside', [new Date(0)]],
    ['a class instance inside', [new Settings()]],
    ['an array inside', [[spec]]],
  ];
}

/** What `call` threw or rejected with (undefined when it did neither). */
export async function failureOf(call: () => unknown): Promise<unknown> {
  try {
    const result = call();
    if (typeof (result as { then?: unknown })?.then === 'function') await result;
  } catch (error) {
    return error;
  }
  return undefined;
}

/** `call` fails with a `ConfigError` whose field matches `field` (and says what it got). */
export async function expectConfigError(
  what: string,
  call: () => unknown,
  field: RegExp,
): Promise<ConfigError> {
  const error = await failureOf(call);
  expect(error, `${what}: ${String(error)}`).toBeInstanceOf(ConfigError);
  const e = error as ConfigError;
  expect(e.field, `${what}: field of ${e.message}`).toMatch(field);
  expect(e.message, what).toContain(`\`${e.field}\``);
  return e;
}
