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

export function checkObject(field: string, value: unknown): asserts value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(field, 'must be an object', value);
  }
}

/**
 * An options bag: a plain object (its prototype `Object.prototype` or null), not a Map, a Date, a
 * class instance or an array, whose fields would be read as nothing.
 */
export function checkPlainObject(field: string, value: unknown): asserts value is object {
  checkObject(field, value);
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw new ConfigError(field, 'must be a plain object ({ … })', value);
  }
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
  return value;
}

export function nonNegativeInt(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new ConfigError(field, 'must be a non-negative integer', value);
  }
  return value;
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
