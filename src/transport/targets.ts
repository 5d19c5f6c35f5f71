/**
 * What a transport keeps per target (an HTTP connection pool): opened when a shard joins, closed
 * once a removed shard has drained, all closed when the balancer closes. It follows the
 * membership through hooks, so the transport never overrides the balancer's methods.
 */
import type { MembershipHooks } from '../core/membership.js';

export class TargetResources<T, R> {
  readonly #open = new Map<T, R>();
  readonly #retiring = new Set<Promise<void>>();

  constructor(
    private readonly openFor: (target: T) => R,
    private readonly shut: (resource: R, drain: boolean) => Promise<void>,
  ) {}

  /** The resource of a member's target, if it is one. */
  get(target: T): R | undefined {
    return this.#open.get(target);
  }

  values(): R[] {
    return [...this.#open.values()];
  }

  /** Membership hooks that open, retire and close the resources (plus the transport's own). */
  hooks<S>(own: Pick<MembershipHooks<T, S>, 'prepare' | 'sameTarget'>): MembershipHooks<T, S> {
    return {
      ...own,
      added: (shards) => {
        for (const shard of shards) {
          if (!this.#open.has(shard.target))
            this.#open.set(shard.target, this.openFor(shard.target));
        }
      },
      removed: (shard, drained, drain) => drained.then(() => this.#retire(shard.target, drain)),
      closed: async (drain) => {
        const all = this.values();
        this.#open.clear();
        await Promise.all([...all.map((r) => this.shut(r, drain)), ...this.#retiring]);
      },
    };
  }

  #retire(target: T, drain: boolean): Promise<void> {
    const resource = this.#open.get(target);
    if (resource === undefined) return Promise.resolve();
    this.#open.delete(target);
    const closing = this.shut(resource, drain);
    this.#retiring.add(closing);
    return closing.finally(() => this.#retiring.delete(closing));
  }
}
