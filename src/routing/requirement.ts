import { ConfigError } from '../base/errors.js';
import { redactValue } from '../base/redact.js';
import type { CompiledRequirement, Requirement, ShardState } from '../base/types.js';

// The shapes live with the other shared types (a run carries its rule below routing).
export type { CompiledRequirement, Requirement };

/** The value a shard has for a label (`zone` as a fallback label). */
export function labelOf(shard: ShardState, label: string): string | undefined {
  // Own labels only: `toString` or `constructor` is not a label every shard has.
  const value = Object.hasOwn(shard.labels, label) ? shard.labels[label] : undefined;
  if (value !== undefined) return value;
  return label === 'zone' ? shard.zone : undefined;
}

/**
 * Checks and compiles a requirement against the labels the membership has. A label no shard
 * has, a value of the wrong type, or an empty allowed list is a `ConfigError` naming it.
 */
export function compileRequirement(
  field: string,
  value: unknown,
  shards: readonly ShardState[],
): CompiledRequirement {
  const proto =
    typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    // A Map or a Date has no own labels: read as a rule, it would allow every shard.
    throw new ConfigError(
      field,
      'must be a plain object of label → value or list of values',
      value,
    );
  }
  const terms: [string, string[]][] = [];
  for (const [label, allowed] of Object.entries(value as Record<string, unknown>)) {
    if (allowed === undefined) continue;
    const list = typeof allowed === 'string' ? [allowed] : allowed;
    if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) {
      throw new ConfigError(
        `${field}.${label}`,
        'must be a string or an array of strings',
        allowed,
      );
    }
    if (list.length === 0)
      throw new ConfigError(`${field}.${label}`, 'must allow at least one value', allowed);
    if (!shards.some((s) => labelOf(s, label) !== undefined)) {
      throw new ConfigError(`${field}.${label}`, 'names a label that no shard has', label);
    }
    terms.push([label, [...list]]);
  }
  // Values are redacted for messages: a label value may be a URL with credentials.
  const text = terms
    .map(([label, list]) => `${label}=${list.map(redactValue).join('|')}`)
    .join(', ');
  // A copy, frozen: the caller may change its object for the next run (the route event shows
  // the rule this run had).
  const source: Record<string, string | string[]> = {};
  for (const [label] of terms) {
    const given = (value as Record<string, string | string[]>)[label]!;
    source[label] = typeof given === 'string' ? given : (Object.freeze([...given]) as string[]);
  }
  return { source: Object.freeze(source), terms, text: text === '' ? '(none)' : text };
}

/**
 * True while `value` still says what `rule` was compiled from (same labels, same values in the
 * same order): a caller may refill one rule object per record.
 */
export function stillSays(rule: CompiledRequirement, value: object): boolean {
  const current = value as Record<string, unknown>;
  let count = 0;
  for (const label in current) if (current[label] !== undefined) count++;
  if (count !== rule.terms.length) return false;
  for (const [label, allowed] of rule.terms) {
    const given = current[label];
    if (typeof given === 'string') {
      if (allowed.length !== 1 || allowed[0] !== given) return false;
    } else if (
      !Array.isArray(given) ||
      given.length !== allowed.length ||
      given.some((v, i) => v !== allowed[i])
    ) {
      return false;
    }
  }
  return true;
}

export function satisfies(shard: ShardState, requirement: CompiledRequirement): boolean {
  for (const [label, allowed] of requirement.terms) {
    const value = labelOf(shard, label);
    if (value === undefined || !allowed.includes(value)) return false;
  }
  return true;
}
