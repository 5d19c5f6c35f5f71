import { ConfigError } from '../errors.js';
import type { ShardState } from '../types.js';

/**
 * A hard routing rule: label → allowed value(s). A shard satisfies it when, for every label, its
 * value is allowed. `zone` counts as a label when the shard's labels do not set it.
 *
 * @example
 * const euOnly: Requirement = { region: 'eu' };
 * const euOrCh: Requirement = { region: ['eu', 'ch'] };
 */
export type Requirement = Record<string, string | readonly string[]>;

/** A requirement checked once and compiled for matching: `[label, allowed values]` pairs. */
export interface CompiledRequirement {
  readonly source: Requirement;
  readonly terms: readonly (readonly [string, readonly string[]])[];
  /** For messages: `region=eu, tenant=a|b`. */
  readonly text: string;
}

/** The value a shard has for a label (`zone` as a fallback label). */
export function labelOf(shard: ShardState, label: string): string | undefined {
  const value = shard.labels[label];
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
  const text = terms.map(([label, list]) => `${label}=${list.join('|')}`).join(', ');
  return { source: value as Requirement, terms, text: text === '' ? '(none)' : text };
}

export function satisfies(shard: ShardState, requirement: CompiledRequirement): boolean {
  for (const [label, allowed] of requirement.terms) {
    const value = labelOf(shard, label);
    if (value === undefined || !allowed.includes(value)) return false;
  }
  return true;
}
