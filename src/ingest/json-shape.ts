/**
 * A JSON encoder for records that share a shape, faster than `JSON.stringify` per record (about
 * 1.7× on Node 20 for flat records of five fields, `bench/ingest.bench.ts`): it learns the shape
 * of the first plain object it sees — its own keys, in order — and compiles a function that
 * writes exactly that shape, the way fast-json-stringify compiles a schema, except that the
 * schema is learned, not given.
 *
 * The output is always the same text as `JSON.stringify(record)`: before writing, the compiled
 * function checks that the record is a plain object with exactly the learned keys in the learned
 * order (a `for…in` walk, which V8 serves from the shape's enumeration cache) and that each value
 * is a string, a finite or non-finite number, a boolean, null, or an object without `toJSON`
 * (written by `JSON.stringify` itself). Anything else — another shape, `undefined`, a `Date`, a
 * class instance, a `BigInt` — falls back to `JSON.stringify` for that record. After a run of
 * misses the shape is learned again from the record at hand (a source whose shape changed), at
 * most a few times; where code generation is not allowed, every record uses `JSON.stringify`.
 */

/** Misses in a row after which the shape is learned again. */
const RELEARN_AFTER = 32;
/** Shapes learned at most (a source of ever-changing shapes just uses `JSON.stringify`). */
const MAX_SHAPES = 8;
/** Keys a compiled shape may have at most. */
const MAX_KEYS = 64;

/** Characters a JSON string must escape (control characters, `"`, `\`, and any surrogate). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON escapes exactly these control characters
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

type Compiled = (record: unknown) => string | undefined;

/**
 * Returns a `stringify(value)` that gives `JSON.stringify(value)`'s text, and throws a `TypeError`
 * for a value JSON cannot represent at the top level (`undefined`, a function, a symbol) as well
 * as for what `JSON.stringify` throws on (a `BigInt`, a cycle).
 *
 * @example
 * const stringify = shapeStringifier();
 * stringify({ id: 1, name: 'a' }); // '{"id":1,"name":"a"}', through the compiled shape from the second record on
 */
export function shapeStringifier(): (value: unknown) => string {
  let compiled: Compiled | undefined;
  let misses = 0;
  let shapes = 0;
  let canCompile = true;
  return (value: unknown): string => {
    if (compiled !== undefined) {
      const text = compiled(value);
      if (text !== undefined) {
        misses = 0;
        return text;
      }
      if (++misses >= RELEARN_AFTER) compiled = undefined;
    }
    const text = JSON.stringify(value);
    if (text === undefined) {
      throw new TypeError(
        `a record must be JSON-encodable, got ${value === undefined ? 'undefined' : typeof value}`,
      );
    }
    if (compiled === undefined && canCompile && shapes < MAX_SHAPES) {
      const keys = learnableKeys(value);
      if (keys !== undefined) {
        try {
          compiled = compileShape(keys);
          shapes++;
          misses = 0;
        } catch {
          canCompile = false; // code generation disallowed (--disallow-code-generation-from-strings)
        }
      }
    }
    return text;
  };
}

/** The keys of a plain object worth compiling, or undefined. */
function learnableKeys(value: unknown): string[] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  if (Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  const keys = Object.keys(value);
  if (keys.length === 0 || keys.length > MAX_KEYS || keys.includes('toJSON')) return undefined;
  return keys;
}

/**
 * Compiles a writer for objects with exactly `keys`, in that order. Keys enter the generated code
 * only as `JSON.stringify`-quoted literals (valid JavaScript string literals since ES2019), never
 * as code.
 */
function compileShape(keys: readonly string[]): Compiled {
  const lines = [
    'return function shape(r) {',
    "  if (typeof r !== 'object' || r === null || Object.getPrototypeOf(r) !== proto || r.toJSON !== undefined) return undefined;",
    '  let n = 0;',
    '  for (const k in r) if (k !== K[n++]) return undefined;',
    `  if (n !== ${keys.length}) return undefined;`,
    '  let s = "{";',
    '  let v;',
  ];
  keys.forEach((key, i) => {
    const name = JSON.stringify(`${i === 0 ? '' : ','}${JSON.stringify(key)}:`);
    lines.push(
      `  v = r[${JSON.stringify(key)}];`,
      "  if (typeof v === 'string') s += " +
        `${name} + (esc.test(v) ? JSON.stringify(v) : '"' + v + '"');`,
      `  else if (typeof v === 'number') s += ${name} + (v - v === 0 ? '' + v : 'null');`,
      `  else if (typeof v === 'boolean') s += ${name} + (v ? 'true' : 'false');`,
      `  else if (v === null) s += ${name} + 'null';`,
      "  else if (typeof v === 'object' && typeof v.toJSON !== 'function') " +
        `s += ${name} + JSON.stringify(v);`,
      '  else return undefined;',
    );
  });
  lines.push('  return s + "}";', '};');
  const factory = new Function('K', 'esc', 'proto', lines.join('\n')) as (
    keys: readonly string[],
    esc: RegExp,
    proto: object,
  ) => Compiled;
  return factory(keys, NEEDS_ESCAPE, Object.prototype);
}
