/**
 * The invariants every picker keeps, runnable against a user's own picker with no test runner:
 * the balancer relies on each of them (it offers filtered lists, rebuilds on membership change,
 * and tests rely on a seed reproducing a run).
 */
import { ConfigError } from '../base/errors.js';
import { createRandom } from '../base/random.js';
import type { Key, Picker, PickRequest, RandomSource, ShardState } from '../base/types.js';
import { bool, checkKnownKeys, checkObject, orDefault, positiveInt } from '../base/validate.js';
import {
  membership,
  randomSubset,
  readOnlyList,
  shuffleLoads,
  totalInFlight,
} from './conformance-fleet.js';

/** Options of {@link pickerConformance}. */
export interface ConformanceOptions {
  /** Seed of the shard loads, subsets and the pickers' random source (default 1). */
  seed?: number;
  /** Picks per check (default 200). */
  rounds?: number;
  /** Shards in the membership (default 12, at least 3). */
  shards?: number;
  /** Give every shard weight 1 (for pickers that take no weights, as `jump`); default: weights 1–3. */
  equalWeights?: boolean;
}

/** What {@link pickerConformance} returns when every invariant holds. */
export interface ConformanceReport {
  /** The picker's `name`. */
  picker: string;
  /** The invariants checked, in order. */
  checks: string[];
}

/** The invariants, by the names the thrown errors use. */
export const INVARIANTS = {
  shape: 'is a picker',
  empty: 'returns undefined for no shards',
  one: 'handles one shard',
  offered: 'returns only offered shards',
  chooses: 'chooses a shard when offered some',
  exclusion: 'respects exclusion',
  membership: 'survives membership change',
  deterministic: 'deterministic under a seed',
  sticky: 'routes a key consistently',
  immutable: 'does not mutate shards',
} as const;

/** A mutable load table behind frozen views: figures change, identity and fields cannot. */

class ConformanceError extends Error {
  constructor(
    readonly invariant: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConformanceError';
  }
}

const FROZEN_WRITE = /read.only|not extensible|only a getter|Cannot delete property|frozen/i;

/**
 * Checks `factory`'s pickers against the invariants every picker must keep, and throws an `Error`
 * naming the first one broken (`picker "x" breaks "respects exclusion": …`). Shards are frozen
 * views (a write to one throws), offered in membership order as the balancer offers them, after
 * `rebuild` with the full membership. Keyed pickers (`keyed: true`) always get a key; others get
 * one on some picks. Returns a report when all hold.
 *
 * The invariants: it is a picker (a `name`, a `pick`); an empty list gives `undefined`; a single
 * shard is chosen; only offered shards are returned, and some shard is whenever any is offered;
 * a shard left out of the list (excluded for a retry, ejected, at its cap) is never returned;
 * rebuilds with shards added and removed do not throw and never bring back a removed shard; two
 * pickers from the factory given the same seed pick the same sequence; a keyed picker routes a
 * key to the same shard while nothing changes; no shard (nor the list) is written to.
 *
 * @example
 * import { pickerConformance } from 'shardwise/testing';
 * pickerConformance(() => myPicker()); // throws on the first broken invariant
 */
export function pickerConformance(
  factory: () => Picker,
  options: ConformanceOptions = {},
): ConformanceReport {
  if (typeof factory !== 'function') {
    throw new ConfigError(
      'factory',
      'must be a function returning a Picker (pickerConformance(() => p2c()), not pickerConformance(p2c()))',
      factory,
    );
  }
  // A bad option would run no picks (rounds 0) or build no shards (NaN): a pass that checked nothing.
  checkObject('pickerConformance options', options);
  checkKnownKeys('pickerConformance options', options, [
    'seed',
    'rounds',
    'shards',
    'equalWeights',
  ]);
  const seed = orDefault(options.seed, 1, (v) => {
    if (!Number.isSafeInteger(v)) throw new ConfigError('seed', 'must be an integer', v);
    return v as number;
  });
  const rounds = orDefault(options.rounds, 200, (v) => positiveInt('rounds', v));
  const size = Math.max(
    3,
    orDefault(options.shards, 12, (v) => positiveInt('shards', v)),
  );
  const equal = orDefault(options.equalWeights, false, (v) => bool('equalWeights', v));
  let name = '(unnamed)';
  const checks: string[] = [];

  const make = (): Picker => {
    const picker = factory();
    if (
      typeof picker !== 'object' ||
      picker === null ||
      typeof picker.pick !== 'function' ||
      typeof picker.name !== 'string' ||
      (picker.rebuild !== undefined && typeof picker.rebuild !== 'function')
    ) {
      throw new ConformanceError(
        INVARIANTS.shape,
        `the factory must return an object with a string \`name\`, a \`pick\` function and an optional \`rebuild\` function, got ${typeof picker}`,
      );
    }
    name = picker.name;
    return picker;
  };

  try {
    const setup = createRandom(seed ^ 0x5bd1e995);
    let picker = make();
    const keyed = picker.keyed === true;
    checks.push(INVARIANTS.shape);
    const keyFor = (random: RandomSource, i: number): Key | undefined =>
      keyed || i % 2 === 0 ? `key-${(random() * 10_000) | 0}` : undefined;
    const request = (random: RandomSource): PickRequest => ({
      key: undefined,
      attempt: 1,
      random,
      totalInFlight: 0,
    });

    /**
     * Names the most specific broken invariant: nothing returned (`ifNone`), a member that was
     * left out (exclusion), or an object that is no member at all (offered).
     */
    const expectOffered = (
      got: ShardState | undefined,
      offered: readonly ShardState[],
      members: readonly ShardState[],
      ifNone: string,
      where: string,
    ): void => {
      if (got === undefined) {
        fail(
          ifNone,
          `offered ${offered.length} of ${members.length} shards, it returned undefined (${where})`,
        );
      }
      if (offered.includes(got)) return;
      if (members.includes(got)) {
        fail(
          INVARIANTS.exclusion,
          `offered [${offered.map((s) => s.id).join(', ')}], it returned the excluded "${got.id}" (${where})`,
        );
      }
      fail(
        INVARIANTS.offered,
        `it returned ${show(got)}, which is not one of the ${offered.length} shards it was offered (${where}; shards compare by identity, not by id)`,
      );
    };

    // ——— an empty list ———
    const full = membership(size, 'shard', setup, 0, equal);
    rebuild(picker, full.shards, INVARIANTS.empty);
    {
      const req = request(createRandom(seed));
      req.key = 'key-0';
      const got = pick(picker, readOnlyList([]), req, INVARIANTS.empty);
      if (got !== undefined) fail(INVARIANTS.empty, `pick([]) returned ${show(got)}`);
    }
    checks.push(INVARIANTS.empty);

    // ——— one shard, alone and as the only one offered ———
    {
      picker = make();
      const solo = membership(1, 'solo', setup, 0, equal);
      rebuild(picker, solo.shards, INVARIANTS.one);
      const random = createRandom(seed);
      const req = request(random);
      for (let i = 0; i < 10; i++) {
        req.key = keyFor(random, i);
        const got = pick(picker, solo.shards, req, INVARIANTS.one);
        expectOffered(got, solo.shards, solo.shards, INVARIANTS.one, 'a membership of one');
      }
      picker = make();
      rebuild(picker, full.shards, INVARIANTS.one);
      for (let i = 0; i < full.shards.length; i++) {
        const only = readOnlyList([full.shards[i]!]);
        req.key = keyFor(random, i);
        const got = pick(picker, only, req, INVARIANTS.one);
        expectOffered(got, only, full.shards, INVARIANTS.one, `only "${only[0]!.id}" offered`);
      }
    }
    checks.push(INVARIANTS.one);

    // ——— the full membership: an offered shard, always one ———
    picker = make();
    rebuild(picker, full.shards, INVARIANTS.offered);
    {
      const random = createRandom(seed);
      const req = request(random);
      for (let i = 0; i < rounds; i++) {
        shuffleLoads(full, setup);
        req.key = keyFor(setup, i);
        req.attempt = 1 + (i % 3);
        req.totalInFlight = totalInFlight(full);
        const got = pick(picker, full.shards, req, INVARIANTS.offered);
        expectOffered(got, full.shards, full.shards, INVARIANTS.chooses, `pick ${i + 1}`);
      }
    }
    checks.push(INVARIANTS.offered, INVARIANTS.chooses);

    // ——— subsets: a shard left out is never returned ———
    {
      const random = createRandom(seed);
      const req = request(random);
      for (let i = 0; i < rounds; i++) {
        shuffleLoads(full, setup);
        const subset = randomSubset(full.shards, setup);
        req.key = keyFor(setup, i);
        req.attempt = 1 + (i % 3);
        req.totalInFlight = totalInFlight(full);
        const got = pick(picker, subset, req, INVARIANTS.exclusion);
        expectOffered(got, subset, full.shards, INVARIANTS.chooses, `subset pick ${i + 1}`);
      }
    }
    checks.push(INVARIANTS.exclusion);

    // ——— membership changes ———
    {
      const random = createRandom(seed);
      const req = request(random);
      const grown = membership(size + 3, 'shard', setup, 0, equal);
      const shrunk = membership(size - 2, 'shard', setup, 2, equal); // shard-0 and shard-1 removed
      let previous: readonly ShardState[] = full.shards;
      for (const [label, next] of [
        ['added 3 shards', grown],
        ['removed 2 shards', shrunk],
        ['restored the first membership', membership(size, 'shard', setup, 0, equal)],
      ] as const) {
        rebuild(picker, next.shards, INVARIANTS.membership, label);
        for (let i = 0; i < rounds / 4; i++) {
          shuffleLoads(next, setup);
          const subset = i % 2 === 0 ? next.shards : randomSubset(next.shards, setup);
          req.key = keyFor(setup, i);
          req.totalInFlight = totalInFlight(next);
          const got = pick(picker, subset, req, INVARIANTS.membership, label);
          if (got !== undefined && previous.includes(got)) {
            fail(
              INVARIANTS.membership,
              `after a rebuild that ${label}, it returned ${show(got)} of the previous membership`,
            );
          }
          expectOffered(
            got,
            subset,
            next.shards,
            INVARIANTS.membership,
            `after a rebuild that ${label}`,
          );
        }
        previous = next.shards;
      }
    }
    checks.push(INVARIANTS.membership);

    // ——— determinism: two pickers, one script, one seed ———
    {
      const script = (): string[] => {
        const p = make();
        const m = membership(size, 'shard', createRandom(seed ^ 0x2545f491), 0, equal);
        const scriptRandom = createRandom(seed ^ 0x68e31da4);
        rebuild(p, m.shards, INVARIANTS.deterministic);
        const req = request(createRandom(seed));
        const ids: string[] = [];
        for (let i = 0; i < rounds; i++) {
          shuffleLoads(m, scriptRandom);
          const subset = i % 3 === 0 ? randomSubset(m.shards, scriptRandom) : m.shards;
          req.key = keyFor(scriptRandom, i);
          req.totalInFlight = totalInFlight(m);
          ids.push(pick(p, subset, req, INVARIANTS.deterministic)?.id ?? '(none)');
        }
        return ids;
      };
      const a = script();
      const b = script();
      const at = a.findIndex((id, i) => id !== b[i]);
      if (at >= 0) {
        fail(
          INVARIANTS.deterministic,
          `two pickers from the factory, given the same seed and the same shards, differ at pick ${at + 1} ("${a[at]}" vs "${b[at]}"): draw randomness only from request.random, and keep no state shared between instances`,
        );
      }
    }
    checks.push(INVARIANTS.deterministic);

    // ——— keyed pickers: a key stays put while nothing changes ———
    if (keyed) {
      const p = make();
      const m = membership(size, 'shard', setup, 0, equal);
      rebuild(p, m.shards, INVARIANTS.sticky);
      const req = request(createRandom(seed));
      const first = new Map<string, string | undefined>();
      for (let pass = 0; pass < 2; pass++) {
        for (let k = 0; k < rounds; k++) {
          const key = `sticky-${k}`;
          req.key = key;
          const got = pick(p, m.shards, req, INVARIANTS.sticky)?.id;
          if (pass === 0) first.set(key, got);
          else if (first.get(key) !== got) {
            fail(INVARIANTS.sticky, `key "${key}" went to "${first.get(key)}", then to "${got}"`);
          }
        }
      }
      checks.push(INVARIANTS.sticky);
    }

    // Every check above offered frozen shards and frozen lists: a write would have thrown.
    checks.push(INVARIANTS.immutable);
    return { picker: name, checks };
  } catch (error) {
    if (error instanceof ConformanceError) {
      const failure = new Error(
        `pickerConformance: picker "${name}" breaks "${error.invariant}": ${error.message}`,
      );
      Object.defineProperty(failure, 'invariant', { value: error.invariant, enumerable: true });
      throw failure;
    }
    throw error;
  }
}

function fail(invariant: string, message: string): never {
  throw new ConformanceError(invariant, message);
}

function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'object' && value !== null && typeof (value as ShardState).id === 'string') {
    return `shard "${(value as ShardState).id}"`;
  }
  return String(value);
}

/** Calls `pick`, turning a throw into the broken invariant (a write to a frozen shard: immutability). */
function pick(
  picker: Picker,
  shards: readonly ShardState[],
  request: PickRequest,
  invariant: string,
  context?: string,
): ShardState | undefined {
  try {
    return picker.pick(shards, request);
  } catch (error) {
    throw asBroken(error, invariant, 'pick', context);
  }
}

function rebuild(
  picker: Picker,
  shards: readonly ShardState[],
  invariant: string,
  context?: string,
): void {
  try {
    picker.rebuild?.(shards);
  } catch (error) {
    throw asBroken(error, invariant, 'rebuild', context);
  }
}

function asBroken(
  error: unknown,
  invariant: string,
  what: string,
  context: string | undefined,
): ConformanceError {
  const message = String((error as Error)?.message ?? error);
  if (error instanceof TypeError && FROZEN_WRITE.test(message)) {
    return new ConformanceError(
      INVARIANTS.immutable,
      `${what}() wrote to a shard or to the shard list (they are frozen): ${message}`,
    );
  }
  return new ConformanceError(
    invariant,
    `${what}()${context === undefined ? '' : ` (after a rebuild that ${context})`} threw: ${message}`,
  );
}
