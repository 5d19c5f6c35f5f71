/**
 * Option checks shared by every factory: each throws a `ConfigError` naming the field, the
 * expectation and what was given.
 */
import { ConfigError } from './errors.js';

/** Rejects option names the caller did not mean (a typo must not be silently ignored). */
export function checkKnownKeys(field: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key) && (value as Record<string, unknown>)[key] !== undefined) {
      throw new ConfigError(
        field === '' ? key : `${field}.${key}`,
        `is not a known option (known: ${known.join(', ')})`,
        (value as Record<string, unknown>)[key],
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

/** A duration in ms: finite and ≥ 0 (or > 0 with `positive`). */
export function duration(field: string, value: unknown, positive = false): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (positive && value === 0)
  ) {
    throw new ConfigError(
      field,
      positive ? 'must be a positive finite number of ms' : 'must be a finite number of ms ≥ 0',
      value,
    );
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
