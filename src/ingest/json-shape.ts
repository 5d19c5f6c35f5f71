/**
 * A JSON encoder for records that share a shape, writing bytes straight into a batch body: about
 * twice as fast as `JSON.stringify` per record and a join (`bench/ingest.bench.ts`), and it makes
 * no string per record, so the garbage collector has far less to do. It learns the shape of the
 * first plain object it sees — its own keys, in order — and compiles a writer for exactly that
 * shape, the way fast-json-stringify compiles a schema, except that the schema is learned.
 *
 * The bytes are always the UTF-8 of `JSON.stringify(record)`. Before writing, the compiled writer
 * checks that the record is a plain object with exactly the learned keys in the learned order (a
 * `for…in` walk, served from V8's enumeration cache for objects of one shape). Values: ASCII
 * strings that need no escape are copied; any other string is written from `JSON.stringify` of
 * it; safe integers are written digit by digit, other numbers from their `String`; booleans and
 * null as words; objects without `toJSON` from `JSON.stringify`. Anything else — another shape,
 * `undefined`, a `Date`, a class instance, a `BigInt` — makes that record fall back to
 * `JSON.stringify`. After a run of misses the shape is learned again from the record at hand, at
 * most a few times; where code generation is not allowed, every record uses `JSON.stringify`.
 */
import { ByteBuffer, writeSafeInteger } from './bytes.js';

/** Misses in a row after which the shape is learned again. */
const RELEARN_AFTER = 32;
/** Shapes learned at most (a source of ever-changing shapes just uses `JSON.stringify`). */
const MAX_SHAPES = 8;
/** Keys a compiled shape may have at most. */
const MAX_KEYS = 64;
/** Compiled shapes kept for every writer of the process (an ingestion reuses warm code). */
const SHAPE_CACHE_SIZE = 64;
const shapeCache = new Map<string, Compiled>();

/** Writes one record of the learned shape; false (having written nothing) when it is not one. */
type Compiled = (record: unknown, out: ByteBuffer) => boolean;

/** Writes the JSON text of a value as UTF-8 at the end of `out`. */
export type JsonWriter = (value: unknown, out: ByteBuffer) => void;

/**
 * Returns a writer of `JSON.stringify(value)`'s text, as UTF-8, into a {@link ByteBuffer}. It
 * throws a `TypeError` for a value JSON cannot represent at the top level (`undefined`, a
 * function, a symbol) and whatever `JSON.stringify` throws (a `BigInt`, a cycle); after a throw,
 * bytes of a partly written record may remain: the caller puts `out.length` back.
 *
 * @example
 * const write = jsonWriter();
 * const out = new ByteBuffer();
 * write({ id: 1, name: 'a' }, out); // learns the shape
 * write({ id: 2, name: 'b' }, out); // through the compiled writer
 * out.view().toString(); // '{"id":1,"name":"a"}{"id":2,"name":"b"}'
 */
export function jsonWriter(): JsonWriter {
  let compiled: Compiled | undefined;
  let misses = 0;
  let shapes = 0;
  let canCompile = true;
  return (value, out) => {
    if (compiled !== undefined) {
      if (compiled(value, out)) {
        misses = 0;
        return;
      }
      if (++misses >= RELEARN_AFTER) compiled = undefined;
    }
    const text = JSON.stringify(value);
    if (text === undefined) {
      throw new TypeError(
        `a record must be JSON-encodable, got ${value === undefined ? 'undefined' : typeof value}`,
      );
    }
    out.writeText(text);
    if (compiled === undefined && canCompile && shapes < MAX_SHAPES) {
      const keys = learnableKeys(value);
      if (keys !== undefined) {
        try {
          compiled = cachedShape(keys);
          shapes++;
          misses = 0;
        } catch {
          canCompile = false; // code generation disallowed (--disallow-code-generation-from-strings)
        }
      }
    }
  };
}

/** `JSON.stringify(value)` through a {@link jsonWriter} (for tests and measurements). */
export function shapeStringifier(): (value: unknown) => string {
  const write = jsonWriter();
  const out = new ByteBuffer();
  return (value) => {
    out.length = 0;
    write(value, out);
    return out.view().toString('utf8');
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
 * The writer of `keys`, compiled once per process: a later ingestion of the same records gets
 * code the JIT has already optimized, instead of warming up a new copy.
 */
function cachedShape(keys: readonly string[]): Compiled {
  const id = JSON.stringify(keys);
  let compiled = shapeCache.get(id);
  if (compiled === undefined) {
    compiled = compileShape(keys);
    if (shapeCache.size < SHAPE_CACHE_SIZE) shapeCache.set(id, compiled);
  }
  return compiled;
}

/** JavaScript statements storing `bytes` at `b[o]`, `b[o + 1]` …, then moving `o` past them. */
function stores(bytes: Buffer): string {
  let code = '';
  for (let i = 0; i < bytes.length; i++) code += `b[o${i === 0 ? '' : ` + ${i}`}] = ${bytes[i]}; `;
  return `${code}o += ${bytes.length};`;
}

/** Worst-case bytes of a number (`-1.2345678901234567e-308` is 24), `false`, or `null`. */
const SCALAR_MAX = 25;

/**
 * Compiles a writer for objects with exactly `keys`, in that order. Keys enter the generated code
 * only as `JSON.stringify`-quoted literals (valid JavaScript string literals since ES2019) and as
 * byte values, never as code. The writer reads every value first, reserves room for the whole
 * record once (strings counted at their length, the ASCII case), then writes with a local
 * offset; a string that needs escaping, or an object, is written through `out` and the room is
 * reserved again.
 */
function compileShape(keys: readonly string[]): Compiled {
  const names = keys.map((key, i) =>
    Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(key)}:`, 'utf8'),
  );
  const fixed = names.reduce((n, name) => n + name.length, 1);
  const lines = [
    'return function shape(r, out) {',
    "  if (typeof r !== 'object' || r === null || Object.getPrototypeOf(r) !== proto || r.toJSON !== undefined) return false;",
    '  let n = 0;',
    '  for (const k in r) if (k !== K[n++]) return false;',
    `  if (n !== ${keys.length}) return false;`,
    `  let need = ${fixed};`,
  ];
  keys.forEach((key, i) => {
    lines.push(
      `  const v${i} = r[${JSON.stringify(key)}];`,
      `  if (typeof v${i} === 'string') need += v${i}.length + 2;`,
      `  else if (typeof v${i} === 'number' || typeof v${i} === 'boolean' || v${i} === null) need += ${SCALAR_MAX};`,
      `  else if (typeof v${i} !== 'object' || typeof v${i}.toJSON === 'function') return false;`,
    );
  });
  lines.push('  let b = out.reserve(need);', '  let o = out.length;', '  let c, j, L, s;');
  keys.forEach((_key, i) => {
    const v = `v${i}`;
    lines.push(
      `  ${stores(names[i]!)}`,
      `  if (typeof ${v} === 'string') {`,
      `    L = ${v}.length; b[o++] = 34;`,
      `    for (j = 0; j < L; j++) { c = ${v}.charCodeAt(j); if (c < 32 || c > 126 || c === 34 || c === 92) break; b[o + j] = c; }`,
      '    if (j === L) { o += L; b[o++] = 34; }',
      `    else { out.length = o - 1; out.writeText(JSON.stringify(${v})); b = out.reserve(need); o = out.length; }`,
      `  } else if (typeof ${v} === 'number') {`,
      `    if (${v} - ${v} !== 0) { b[o] = 110; b[o + 1] = 117; b[o + 2] = 108; b[o + 3] = 108; o += 4; }`,
      `    else if (Number.isSafeInteger(${v})) o = writeInt(b, o, ${v});`,
      `    else { s = '' + ${v}; for (j = 0; j < s.length; j++) b[o + j] = s.charCodeAt(j); o += s.length; }`,
      `  } else if (${v} === true) { b[o] = 116; b[o + 1] = 114; b[o + 2] = 117; b[o + 3] = 101; o += 4; }`,
      `  else if (${v} === false) { b[o] = 102; b[o + 1] = 97; b[o + 2] = 108; b[o + 3] = 115; b[o + 4] = 101; o += 5; }`,
      `  else if (${v} === null) { b[o] = 110; b[o + 1] = 117; b[o + 2] = 108; b[o + 3] = 108; o += 4; }`,
      `  else { out.length = o; out.writeText(JSON.stringify(${v})); b = out.reserve(need); o = out.length; }`,
    );
  });
  lines.push('  b[o] = 125;', '  out.length = o + 1;', '  return true;', '};');
  const factory = new Function('K', 'proto', 'writeInt', lines.join('\n')) as (
    keys: readonly string[],
    proto: object,
    writeInt: typeof writeSafeInteger,
  ) => Compiled;
  return factory(keys, Object.prototype, writeSafeInteger);
}
