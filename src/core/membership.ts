/**
 * Membership: which shards the balancer has, in a stable order. Installs a new membership (the
 * picker rebuilds first, so a picker that cannot build leaves everything as it was), diffs
 * `setShards` by id, detaches removed shards and tells when they have drained. Transports and
 * discovery react through {@link MembershipHooks} instead of overriding the balancer's methods.
 */
import { ConfigError, ShardRemovedError } from '../base/errors.js';
import type { Picker, ShardSpec, ShardState } from '../base/types.js';
import type { Shard } from '../load/shard.js';
import { checkShardList, checkShardSpec } from './options.js';

/**
 * How a transport (or any owner of per-shard resources) follows the membership.
 *
 * @example
 * const hooks: MembershipHooks<string> = {
 *   added: (shards) => shards.forEach((s) => pools.set(s.id, openPool(s.target))),
 *   removed: (shard, drained) => drained.then(() => pools.get(shard.id)?.close()),
 * };
 */
export interface MembershipHooks<T, S = ShardSpec<T>> {
  /** Turns a spec as the user gives it into a core spec (e.g. an origin string into a target). */
  prepare?(spec: S, field: string): ShardSpec<T>;
  /**
   * Whether a kept id may keep its shard (its figures, its connections) with the target of the
   * new spec; a shard whose target changed is replaced. Default: the same object, or equal plain
   * data (`samePlainData`).
   */
  sameTarget?(current: T, next: T): boolean;
  /** Shards joined; called before any run can start on them. */
  added?(shards: readonly ShardState<T>[]): void;
  /**
   * A shard left; `drained` resolves when its last call ended. What the hook returns is awaited
   * before `removeShard`/`setShards` resolve (a pool closing, say).
   */
  removed?(shard: ShardState<T>, drained: Promise<void>, drain: boolean): Promise<void> | void;
  /** The balancer closed and every run settled (or was aborted); release everything. */
  closed?(drain: boolean): Promise<void> | void;
}

/** What membership needs from the balancer that owns it. */
export interface MembershipHost<T> {
  readonly picker: Picker;
  newShard(spec: ShardSpec<T>, index: number): Shard<T>;
  /** The membership changed (after indexes and the picker were rebuilt). */
  installed(shards: readonly Shard<T>[]): void;
  /** Ends every running attempt on a shard removed without drain. */
  abortAttempts(shard: Shard<T>, error: unknown): void;
  /** Membership events and the queue pump. */
  changed(added: readonly Shard<T>[], removed: readonly Shard<T>[], drained: boolean): void;
}

export class Membership<T, S = ShardSpec<T>> {
  shards: Shard<T>[] = [];
  /**
   * Bumped on every install, and by the balancer when a keyed picker rehashes (`resize()`):
   * caches keyed by membership (rule masks, homes) check it.
   */
  version = 0;
  readonly #removals = new Map<Shard<T>, () => void>();

  constructor(
    private readonly host: MembershipHost<T>,
    private readonly hooks: MembershipHooks<T, S>,
  ) {}

  /** Checks and prepares user specs into core specs (`field` names the list). */
  prepare(field: string, specs: unknown): ShardSpec<T>[] {
    const prepare = this.hooks.prepare;
    return checkShardList<T>(
      field,
      specs,
      prepare === undefined ? undefined : (spec, at) => prepare(spec as S, at),
    );
  }

  /** The first membership (the constructor's). */
  start(specs: readonly ShardSpec<T>[]): void {
    const shards = specs.map((spec, i) => this.host.newShard(spec, i));
    this.install(shards);
    this.hooks.added?.(shards);
  }

  add(given: unknown): void {
    const spec = this.hooks.prepare === undefined ? given : this.hooks.prepare(given as S, 'shard');
    checkShardSpec('shard', spec);
    const core = spec as ShardSpec<T>;
    if (this.shards.some((s) => s.id === core.id)) {
      throw new ConfigError('shard.id', 'must be unique, and is already a member', core.id);
    }
    const shard = this.host.newShard(core, this.shards.length);
    this.install([...this.shards, shard]);
    this.hooks.added?.([shard]);
    this.host.changed([shard], [], true);
  }

  remove(id: unknown, drain: boolean): Promise<void> {
    const shard = this.shards.find((s) => s.id === id);
    // A bad call throws, as `add` and `set` do; the balancer's public methods reject with it.
    if (shard === undefined) throw new ConfigError('id', 'must name a member shard', id);
    // Out of the membership first, so aborting its attempts (which frees slots and starts queued
    // runs) cannot hand it a new pick.
    this.install(this.shards.filter((s) => s !== shard));
    const done = this.#detach(shard, drain);
    this.host.changed([], [shard], drain);
    return done;
  }

  /** Makes the membership exactly `given` (diffed by id); resolves when removed shards drained. */
  set(given: unknown): Promise<void> {
    const specs = this.prepare('shards', given);
    const same = this.hooks.sameTarget ?? samePlainData;
    const byId = new Map(this.shards.map((s) => [s.id, s]));
    const next: Shard<T>[] = [];
    const added: Shard<T>[] = [];
    const kept: { shard: Shard<T>; spec: ShardSpec<T> }[] = [];
    specs.forEach((spec, i) => {
      const existing = byId.get(spec.id);
      if (existing !== undefined && same(existing.target, spec.target)) {
        byId.delete(spec.id);
        kept.push({ shard: existing, spec });
        next.push(existing);
      } else {
        const shard = this.host.newShard(spec, i);
        added.push(shard);
        next.push(shard);
      }
    });
    // New weights take part in the rebuild; restored if it fails.
    const before = kept.map(({ shard }) => [shard.weight, shard.zone, shard.labels] as const);
    for (const { shard, spec } of kept) {
      shard.weight = spec.weight ?? 1;
      shard.zone = spec.zone;
      shard.labels = Object.freeze({ ...(spec.labels ?? {}) });
    }
    try {
      this.install(next);
    } catch (error) {
      kept.forEach(({ shard }, i) => {
        [shard.weight, shard.zone, shard.labels] = before[i]!;
      });
      throw error;
    }
    const gone = [...byId.values()];
    this.hooks.added?.(added);
    const removals = gone.map((shard) => this.#detach(shard, true));
    this.host.changed(added, gone, true);
    return Promise.all(removals).then(noop);
  }

  /** The balancer closed and every run settled: the hooks release what they hold. */
  async close(drain: boolean): Promise<void> {
    await this.hooks.closed?.(drain);
  }

  /** A removed shard's last call ended. */
  released(shard: Shard<T>): void {
    const resolve = this.#removals.get(shard);
    if (resolve === undefined) return;
    this.#removals.delete(shard);
    resolve();
  }

  /**
   * The shard `shard` names (an id, or the state a `send` was given): a member, or one removed
   * with drain whose calls still run — a call that ends there may still report its load (it is
   * dropped with the shard). A `ConfigError` for any other.
   */
  member(shard: string | ShardState<T>): Shard<T> {
    if (typeof shard === 'string') {
      const found = this.shards.find((s) => s.id === shard);
      if (found !== undefined) return found;
    } else if (typeof shard === 'object' && shard !== null && this.shards[shard.index] === shard) {
      return shard as Shard<T>;
    }
    if (typeof shard === 'string' || (typeof shard === 'object' && shard !== null)) {
      for (const s of this.#removals.keys()) if (s === shard || s.id === shard) return s;
    }
    throw new ConfigError(
      'shard',
      'must be a member shard or its id',
      typeof shard === 'object' ? shard?.id : shard,
    );
  }

  /** Makes `shards` the membership: the picker rebuilds first (it may refuse), then indexes. */
  install(shards: Shard<T>[]): void {
    withIndexes(shards);
    try {
      this.host.picker.rebuild?.(shards);
    } catch (error) {
      withIndexes(this.shards);
      throw error;
    }
    this.shards = shards;
    this.version++;
    this.host.installed(shards);
  }

  /** Marks a shard removed; resolves when its in-flight calls are over and its hook is done. */
  #detach(shard: Shard<T>, drain: boolean): Promise<void> {
    shard.removed = true;
    if (!drain) this.host.abortAttempts(shard, new ShardRemovedError(shard.id));
    const drained =
      shard.inFlight === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => this.#removals.set(shard, resolve));
    const hook = this.hooks.removed?.(shard, drained, drain);
    return hook === undefined ? drained : Promise.resolve(hook).then(() => drained);
  }
}

/** Gives each shard its position (shards that stay keep their object and figures). */
function withIndexes<T>(shards: Shard<T>[]): Shard<T>[] {
  for (let i = 0; i < shards.length; i++) shards[i]!.index = i;
  return shards;
}

function noop(): void {}

/**
 * The same target, or equal plain data (strings, numbers, plain objects and arrays of them, as a
 * config file re-read gives): a kept id keeps its shard. Anything else — a client, a class
 * instance, a function — is the same only when it is the same object.
 */
export function samePlainData(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => samePlainData(x, b[i]));
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  return keys.every((k) => Object.hasOwn(y, k) && samePlainData(x[k], y[k]));
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
