import { ConfigError, describe, MissingKeyError } from '../../base/errors.js';
import type { Key, Picker, PickRequest, ShardState } from '../../base/types.js';
import { Gate, loadBound } from './bounded.js';
import { checkTableSize, Maglev } from './maglev.js';
import type { HashOrder } from './order.js';
import { Ring } from './ring.js';
import type {
  Affinity,
  ConsistentHashPicker,
  HashAlgorithm,
  HashDescription,
  RehashEvent,
} from './types.js';

type RehashListener = (event: RehashEvent) => void;

/**
 * The picker around one {@link HashOrder}: it keeps the membership the order was built for,
 * checks keys, runs the load bound through a reused {@link Gate}, and answers `home()`,
 * `describe()` and `resize()`. See `consistentHash()` for the semantics.
 */
export class ConsistentHash implements ConsistentHashPicker {
  readonly keyed = true;
  readonly name: `consistent-hash:${HashAlgorithm}`;
  spills = 0;
  private membership: readonly ShardState[] = [];
  private built = false;
  private readonly gate = new Gate();
  private listeners: RehashListener[] = [];

  constructor(
    private readonly algorithm: HashAlgorithm,
    private readonly order: HashOrder,
    readonly affinity: Affinity,
    private readonly c: number | undefined,
    readonly fallback: Picker | undefined,
  ) {
    this.name = `consistent-hash:${algorithm}`;
  }

  rebuild(shards: readonly ShardState[]): void {
    this.order.build(shards);
    // Copied: the caller may reuse its array, and the membership must be the one built for.
    this.membership = shards.slice();
    this.built = true;
    this.fallback?.rebuild?.(shards);
  }

  pick(shards: readonly ShardState[], request: PickRequest): ShardState | undefined {
    const key = request.key;
    if (key === undefined && this.fallback !== undefined) {
      return this.fallback.pick(shards, request);
    }
    this.checkKey(key);
    if (!this.ready(shards)) return undefined;
    const n = this.membership.length;
    // The usual pick — every shard offered, no bound — is the key's first shard, taken as the
    // gate would take it (skipped only for an in-flight figure that is not below Infinity).
    if (this.c === undefined && shards.length === n && this.order.first !== undefined) {
      const shard = shards[this.order.first(key)];
      if (shard !== undefined && shard.inFlight < Number.POSITIVE_INFINITY) return shard;
    }
    const gate = this.gate;
    gate.begin(shards, n, this.c === undefined ? Number.POSITIVE_INFINITY : this.bound(request, n));
    const i = this.order.pick(key, gate);
    if (i >= 0) {
      if (i !== gate.firstOffered) this.spills++;
      return gate.offered(i);
    }
    return gate.firstOffered >= 0 ? gate.offered(gate.firstOffered) : undefined;
  }

  home(shards: readonly ShardState[], key: Key): ShardState | undefined {
    this.checkKey(key);
    if (!this.ready(shards)) return undefined;
    if (shards.length === this.membership.length && this.order.first !== undefined) {
      return shards[this.order.first(key)];
    }
    const gate = this.gate;
    // No bound: the walk stops at the first offered shard of the key's order, and remembers it
    // even if a load figure is NaN or infinite.
    gate.begin(shards, this.membership.length, Number.POSITIVE_INFINITY);
    this.order.pick(key, gate);
    return gate.firstOffered >= 0 ? gate.offered(gate.firstOffered) : undefined;
  }

  describe(): HashDescription {
    const shares = this.order.shares();
    const description: HashDescription = {
      algorithm: this.algorithm,
      shards: this.membership.map((s, i) => ({ id: s.id, share: shares[i] ?? 0 })),
    };
    if (this.order instanceof Maglev && this.order.tableSize !== undefined) {
      description.tableSize = this.order.tableSize;
    }
    if (this.order instanceof Ring) description.points = this.order.points;
    return description;
  }

  resize(tableSize: number): RehashEvent {
    const order = this.order;
    if (!(order instanceof Maglev)) {
      throw new ConfigError(
        'tableSize',
        `cannot be resized: resize() applies only to algorithm 'maglev' (algorithm is '${this.algorithm}')`,
        tableSize,
      );
    }
    checkTableSize('tableSize', tableSize);
    const n = this.membership.length;
    if (tableSize < n) {
      throw new ConfigError(
        'tableSize',
        `must be at least the shard count (${n}), so that every shard holds a slot`,
        tableSize,
      );
    }
    const previousTableSize = order.tableSize ?? 0;
    const moved = order.resize(this.membership, tableSize);
    const event: RehashEvent = { picker: this.name, tableSize, previousTableSize, moved };
    // Every listener hears of the new table, even when one throws; the first error is rethrown.
    let failure: { error: unknown } | undefined;
    for (const listener of this.listeners.slice()) {
      try {
        listener(event);
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure !== undefined) throw failure.error;
    return event;
  }

  onRehash(listener: RehashListener): () => void {
    if (typeof listener !== 'function') {
      throw new ConfigError('onRehash listener', 'must be a function', listener);
    }
    // A wrapper per subscription, so that subscribing one function twice needs two unsubscribes.
    const entry: RehashListener = (event) => listener(event);
    this.listeners = [...this.listeners, entry];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== entry);
    };
  }

  /** Builds on first use or for a wider offer (a standalone user); false when none is offered. */
  private ready(shards: readonly ShardState[]): boolean {
    if (!this.built || shards.length > this.membership.length) this.rebuild(shards);
    return shards.length > 0;
  }

  private checkKey(key: unknown): asserts key is Key {
    if (key === undefined) throw new MissingKeyError(this.name);
    if (typeof key !== 'string' && !(key instanceof Uint8Array)) {
      throw new TypeError(`\`key\` must be a string or a Uint8Array, got ${describe(key)}`);
    }
  }

  private bound(request: PickRequest, n: number): number {
    let total = request.totalInFlight;
    if (typeof total !== 'number' || !Number.isFinite(total)) {
      total = 0;
      for (const s of this.membership) total += s.inFlight;
    }
    return loadBound(this.c!, total, n);
  }
}
