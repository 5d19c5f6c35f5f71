/**
 * Option checks shared by every factory: each throws a `ConfigError` naming the field, the
 * expectation and what was given.
 */
import { ConfigError } from './errors.js';

/**
 * Rejects option names the caller did not mean (a typo must not be silently ignored). The value
 * of an unknown name is described by its type only: it may be a credential put in the wrong
 * place (`{ authorization: 'Bearer …' }` beside `headers`, `header:` for `headers:`).
 */
export function checkKnownKeys(field: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key) && (value as Record<string, unknown>)[key] !== undefined) {
      throw new ConfigError(
        field === '' ? key : `${field}.${key}`,
        `is not a known option (known: ${known.join(', ')})`,
        (value as Record<string, unknown>)[key],
        { secret: true },
      );
    }
  }
}

/**
 * An options bag: a plain object (`{ … }`, or one made with `Object.create(null)`), not `null`, a
 * number, an array, a Map, a Date or a class instance — whose fields would be read as nothing,
 * silently leaving every option at its default.
 */
export function checkObject(field: string, value: unknown): asserts value is object {
  // The common case first, as one cached property read: `run()` checks its options bag on every
  // call, and `Object.getPrototypeOf` costs it ~20 ns more here (bench/input-checks.bench.ts).
  if (
    typeof value === 'object' &&
    value !== null &&
    (value as { constructor?: unknown }).constructor === Object
  ) {
    return;
  }
  checkObjectLike(field, value);
  if (!isPlainObject(value)) {
    throw new ConfigError(field, 'must be a plain object ({ … })', value);
  }
}

/** Same as {@link checkObject} (the name says what it checks). */
export const checkPlainObject: (field: string, value: unknown) => asserts value is object =
  checkObject;

/**
 * An object that implements an interface (a picker, a clock, a client): any object but `null` or
 * an array, class instances included.
 */
export function checkObjectLike(field: string, value: unknown): asserts value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(field, 'must be an object', value);
  }
}

/**
 * A picker object. A function gets its own hint: `picker: p2c` (the maker) for `p2c()` is the
 * usual slip, and "must be an object, got a function" does not say what to change.
 */
export function checkPickerObject(field: string, value: unknown): asserts value is object {
  if (typeof value === 'function') {
    const maker = /^[A-Za-z_$][\w$]{0,39}$/.test(value.name) ? value.name : 'p2c';
    throw new ConfigError(
      field,
      `must be a Picker (an object with pick()), got a function: call the maker, as in \`${maker}()\``,
      value,
      { given: false },
    );
  }
  checkObjectLike(field, value);
}

/**
 * True for an object literal or a null-prototype object — also one from another realm (a `vm`
 * context, a worker's structured clone), whose `Object.prototype` is not this one.
 */
export function isPlainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === null || proto === Object.prototype) return true;
  return (
    Object.getPrototypeOf(proto) === null &&
    typeof (proto as { constructor?: unknown }).constructor === 'function' &&
    (proto as { constructor: { name?: unknown } }).constructor.name === 'Object'
  );
}

/**
 * A positive integer. With `allowInfinity`, `Infinity` also passes (no cap); the message keeps
 * to the common case, as STYLE.md's example has it.
 */
export function positiveInt(field: string, value: unknown, allowInfinity = false): number {
  if (allowInfinity && value === Number.POSITIVE_INFINITY) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new ConfigError(field, 'must be a positive integer', value);
  }
  return safe(field, value);
}

/**
 * Counts and sizes are added and subtracted: past 2⁵³ − 1 a small one added to a large one is
 * lost, and the subtraction that follows leaves a figure that never returns to 0.
 */
function safe(field: string, value: number): number {
  if (!Number.isSafeInteger(value)) {
    throw new ConfigError(field, 'must be at most 2⁵³ − 1 (Number.MAX_SAFE_INTEGER)', value);
  }
  return value;
}

/** A non-negative integer; with `allowInfinity`, `Infinity` also passes (no cap). */
export function nonNegativeInt(field: string, value: unknown, allowInfinity = false): number {
  if (allowInfinity && value === Number.POSITIVE_INFINITY) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new ConfigError(field, 'must be a non-negative integer', value);
  }
  return safe(field, value);
}

/**
 * The longest duration any option accepts: 365 days. Longer waits are almost surely a unit
 * mistake (seconds for ms, a date for a delay); up to it, every wait is honoured exactly (timers
 * past Node's 2³¹ − 1 ms are chained, see `runtime.ts`).
 */
export const MAX_DURATION_MS = 365 * 24 * 3_600_000;

/** A duration in ms: finite, ≥ 0 (or > 0 with `positive`) and at most {@link MAX_DURATION_MS}. */
export function duration(field: string, value: unknown, positive = false): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (positive && value === 0) ||
    value > MAX_DURATION_MS
  ) {
    throw new ConfigError(
      field,
      `must be a ${positive ? 'positive' : 'non-negative'} number of ms, at most ${MAX_DURATION_MS} (365 days)`,
      value,
    );
  }
  return value;
}

/**
 * A dense array: every index from 0 to length − 1 holds a value (a sparse array such as
 * `[, x]` has holes that `map` and `forEach` skip, and that must not reach deeper code).
 */
export function denseArray(field: string, value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new ConfigError(field, `must be an array of ${what}`, value);
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) {
      throw new ConfigError(
        `${field}[${i}]`,
        `is a hole in the array: list ${what} densely`,
        undefined,
        {
          given: false,
        },
      );
    }
  }
  return value;
}

export function positiveFinite(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigError(field, 'must be a positive finite number', value);
  }
  return value;
}

export function inRange(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    throw new ConfigError(field, `must be a number from ${min} to ${max}`, value);
  }
  return value;
}

export function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new ConfigError(
      field,
      `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`,
      value,
    );
  }
  return value as T;
}

export function fn(field: string, value: unknown): void {
  if (typeof value !== 'function') throw new ConfigError(field, 'must be a function', value);
}

export function bool(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new ConfigError(field, 'must be a boolean', value);
  return value;
}

/** `value` checked by `check`, or `fallback` when it is absent (`undefined`). */
export function orDefault<T>(value: unknown, fallback: T, check: (value: unknown) => T): T {
  return value === undefined ? fallback : check(value);
}

/** A positive duration, ms, or `Infinity` (no bound): timeouts and deadlines. */
export function checkTimeout(field: string, value: unknown): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  return duration(field, value, true);
}
