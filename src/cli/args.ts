/** A bad command line: the CLI prints the message and exits with code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface FlagSpec {
  /**
   * 'int' | 'number' | 'string' | 'bool' | 'list' (comma separated) | 'strings' (repeatable: each
   * `--name value` adds one value, in order).
   */
  type: 'int' | 'number' | 'string' | 'bool' | 'list' | 'strings';
  min?: number;
  /** The largest value a number flag takes (what the command can hold or serve). */
  max?: number;
}

/** Parses `--name value` / `--name=value` / `--flag` against a spec; unknown flags are errors. */
export function parseFlags(
  argv: string[],
  spec: Record<string, FlagSpec>,
): Record<string, unknown> {
  const { flags, operands } = parseArgs(argv, spec);
  if (operands.length > 0) throw new UsageError(`unexpected argument "${operands[0]}"`);
  return flags;
}

/**
 * {@link parseFlags} for a command that also takes operands (files): what is not a flag or a
 * flag's value is an operand, in order; after `--`, everything is (a file named `--x`).
 */
export function parseArgs(
  argv: string[],
  spec: Record<string, FlagSpec>,
): { flags: Record<string, unknown>; operands: string[] } {
  const out: Record<string, unknown> = {};
  const operands: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      operands.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      operands.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const flag = spec[name];
    if (flag === undefined) {
      throw new UsageError(
        `unknown flag --${name} (known: ${Object.keys(spec)
          .map((k) => `--${k}`)
          .join(', ')})`,
      );
    }
    if (flag.type === 'bool') {
      out[name] = eq < 0 ? true : arg.slice(eq + 1) !== 'false';
      continue;
    }
    const raw = eq < 0 ? argv[++i] : arg.slice(eq + 1);
    if (raw === undefined) throw new UsageError(`--${name} needs a value`);
    if (flag.type === 'string') {
      if (out[name] !== undefined) throw new UsageError(`--${name} is given twice`);
      out[name] = raw;
    } else if (flag.type === 'strings') {
      out[name] = [...((out[name] as string[] | undefined) ?? []), raw];
    } else if (flag.type === 'list') out[name] = raw.split(',').filter((s) => s !== '');
    else {
      const value = Number(raw);
      const ok =
        raw.trim() !== '' &&
        (flag.type === 'int' ? Number.isSafeInteger(value) : Number.isFinite(value));
      const low = flag.min !== undefined && value < flag.min;
      const high = flag.max !== undefined && value > flag.max;
      if (!ok || low || high) {
        const kind = flag.type === 'int' ? 'an integer' : 'a number';
        throw new UsageError(`--${name} must be ${kind}${rangeOf(flag)}, got "${raw}"`);
      }
      out[name] = value;
    }
  }
  return { flags: out, operands };
}

/** A flag's bounds as its error states them: ` from 1 to 100`, ` ≥ 1`, ` ≤ 100`, or nothing. */
function rangeOf({ min, max }: FlagSpec): string {
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` ≥ ${min}`;
  return max === undefined ? '' : ` ≤ ${max}`;
}
