/**
 * `--key FIELD`: a record's routing key read from one of its JSON fields, without turning the
 * record into an object. A JSONL line is sent as it is in the file (no parse, no re-encoding: a
 * large integer or a float keeps its digits), so the field is found by scanning the line: the
 * object's keys in order, each value skipped by its shape, the scan stopping at the field: three
 * to four times as fast as `JSON.parse` here (bench/cli-ingest.bench.ts), which would otherwise
 * take a good part of a keyed load's CPU.
 */

/** A record with no field to route by: it fails (into the dead letters), the load goes on. */
export class KeyFieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyFieldError';
  }
}

/**
 * The key function of `--key field` (`field` may be a path into nested objects: `user.id`): a
 * string value is the key as it is, a number its JSON text as `String(JSON.parse(…))` gives it.
 * Records may be JSONL lines (strings, `Buffer`s) or objects (a replayed dead letter). A record
 * without the field, or whose field is neither a string nor a number, throws a `KeyFieldError`,
 * whose message never quotes the record (it may hold a secret).
 *
 * @example
 * const key = keyField('user.id');
 * key('{"user":{"id":42},"msg":"hi"}'); // '42'
 */
export function keyField(field: string): (record: unknown) => string {
  const path = field.split('.');
  return (record) => {
    let value: unknown;
    if (typeof record === 'string') value = lineField(record, path);
    else if (record instanceof Uint8Array) {
      value = lineField(
        Buffer.from(record.buffer, record.byteOffset, record.length).toString(),
        path,
      );
    } else value = objectField(record, path);
    if (typeof value === 'string') return value;
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
    if (value === NOT_JSON)
      throw new KeyFieldError(`the record is not a JSON object: no "${field}" to route by`);
    if (value === undefined)
      throw new KeyFieldError(`the record has no "${field}" field to route by`);
    throw new KeyFieldError(
      `the record's "${field}" field is ${kindOf(value)}: only a string or a number routes`,
    );
  };
}

/** What the scan gives for a line it cannot read as a JSON object. */
const NOT_JSON: unique symbol = Symbol('not a JSON object');
/** A value that is there but neither a string nor a number (its kind is all the error says). */
const OTHER = {
  object: Symbol('an object'),
  array: Symbol('an array'),
  literal: Symbol('true, false or null'),
};

function kindOf(value: unknown): string {
  if (typeof value === 'symbol') return value.description ?? 'not a string';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function objectField(record: unknown, path: readonly string[]): unknown {
  let at = record;
  for (const name of path) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    if (!Object.hasOwn(at, name)) return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return at;
}

const QUOTE = 34;
const BACKSLASH = 92;
const COLON = 58;
const COMMA = 44;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;

/**
 * The value at `path` in the JSON object `s`: a string, a number, a marker of another kind, or
 * `undefined` when a key of the path is absent. Only what lies before the field is read, so
 * the rest of a line is not checked (it goes to the shard as it is, as lines do without --key).
 */
function lineField(s: string, path: readonly string[]): unknown {
  let i = skipSpace(s, 0);
  if (s.charCodeAt(i) !== OPEN_OBJECT) return NOT_JSON;
  for (let depth = 0; ; depth++) {
    const found = findKey(s, i, path[depth]!);
    if (found < 0) return found === ABSENT ? undefined : NOT_JSON;
    i = found;
    if (depth === path.length - 1) return readValue(s, i);
    // A path through anything but an object finds no field (as in a parsed record).
    if (s.charCodeAt(i) !== OPEN_OBJECT) return readValue(s, i) === NOT_JSON ? NOT_JSON : undefined;
  }
}

const ABSENT = -1;
const BROKEN = -2;

/**
 * In the object opening at `s[open]`, the index of the value of key `name` (spaces skipped), or
 * `ABSENT` when the object has no such key, `BROKEN` when it is not well formed that far.
 */
function findKey(s: string, open: number, name: string): number {
  let i = skipSpace(s, open + 1);
  if (s.charCodeAt(i) === CLOSE_OBJECT) return ABSENT;
  for (;;) {
    if (s.charCodeAt(i) !== QUOTE) return BROKEN;
    const end = stringEnd(s, i);
    if (end < 0) return BROKEN;
    const match = sameKey(s, i, end, name);
    i = skipSpace(s, end);
    if (s.charCodeAt(i) !== COLON) return BROKEN;
    i = skipSpace(s, i + 1);
    if (match) return i;
    i = valueEnd(s, i);
    if (i < 0) return BROKEN;
    i = skipSpace(s, i);
    const c = s.charCodeAt(i);
    if (c === CLOSE_OBJECT) return ABSENT;
    if (c !== COMMA) return BROKEN;
    i = skipSpace(s, i + 1);
  }
}

/** The key `s[open, end)` (quotes included) is `name` — escapes decoded when it has any. */
function sameKey(s: string, open: number, end: number, name: string): boolean {
  if (end - open - 2 === name.length && s.startsWith(name, open + 1)) return true;
  let escaped = false;
  for (let i = open + 1; i < end - 1 && !escaped; i++) escaped = s.charCodeAt(i) === BACKSLASH;
  if (!escaped) return false;
  try {
    return JSON.parse(s.slice(open, end)) === name;
  } catch {
    return false;
  }
}

/** The value starting at `s[i]`: a string or number as `JSON.parse` gives it, else a marker. */
function readValue(s: string, i: number): unknown {
  const c = s.charCodeAt(i);
  if (c === QUOTE) {
    const end = stringEnd(s, i);
    if (end < 0) return NOT_JSON;
    const inner = s.slice(i + 1, end - 1);
    if (!inner.includes('\\')) return inner;
    try {
      return JSON.parse(s.slice(i, end));
    } catch {
      return NOT_JSON;
    }
  }
  if (c === OPEN_OBJECT) return OTHER.object;
  if (c === OPEN_ARRAY) return OTHER.array;
  const end = valueEnd(s, i);
  if (end < 0 || end === i) return NOT_JSON;
  const token = s.slice(i, end);
  if (token === 'true' || token === 'false' || token === 'null') return OTHER.literal;
  // JSON's grammar of a number: Number() alone would take `0x1f`, `Infinity` or ` 12`.
  if (!/^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(token)) return NOT_JSON;
  return Number(token);
}

/** The index just after the string opening at `s[i]` (its closing quote), or -1. */
function stringEnd(s: string, i: number): number {
  for (i++; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) return i + 1;
    if (c === BACKSLASH) i++;
  }
  return -1;
}

/** The index just after the value starting at `s[i]` (nested objects and arrays skipped), or -1. */
function valueEnd(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === QUOTE) return stringEnd(s, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (; i < s.length; i++) {
      const d = s.charCodeAt(i);
      if (d === QUOTE) {
        i = stringEnd(s, i) - 1;
        if (i < 0) return -1;
      } else if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
      else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  for (; i < s.length; i++) {
    const d = s.charCodeAt(i);
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || d <= 32) return i;
  }
  return i;
}

function skipSpace(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) i++;
    else return i;
  }
}
