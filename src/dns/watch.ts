import { Resolver } from 'node:dns/promises';
import { GuardedEmitter } from '../base/callbacks.js';
import { ConfigError } from '../base/errors.js';
import type { Clock, RandomSource, ShardSpec, ShardState } from '../base/types.js';
import { ON_CLOSE } from '../ingest/types.js';
import { type DnsWatchOptions, type ResolvedDnsOptions, resolveDnsOptions } from './options.js';
import { type DnsRecord, type KnownHosts, type Resolution, resolveShards } from './resolve.js';

/**
 * What the watch needs of a balancer: its membership and its clock. The core `Balancer`,
 * `createHttpBalancer()` and `createS3Balancer()` all fit.
 *
 * @example
 * const membership: DnsMembership<string> = new Balancer<string>({ shards: [{ id: 'seed', target: 'http://seed' }] });
 */
export interface DnsMembership<T> {
  readonly shards: readonly ShardState<unknown>[];
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly closed?: boolean;
  setShards(specs: ShardSpec<T>[]): Promise<void>;
}

/**
 * A membership change the watch applied.
 *
 * @example
 * watch.on('change', ({ added, removed, reweighted }) => log.info({ added, removed, reweighted }));
 */
export interface DnsChange {
  /** Ids (`address:port`) of the shards added. */
  added: string[];
  /** Ids of the shards removed (they drain: their in-flight calls finish). */
  removed: string[];
  /**
   * Ids of kept shards whose weight in DNS (`DnsRecord.dnsWeight`) changed. The weights applied
   * are scaled together (`DNS_WEIGHT_TOTAL`), so others may move with it.
   */
  reweighted: string[];
}

/** The watch's events (eventemitter3: an `'error'` without a listener is dropped, not thrown). */
export interface DnsWatchEvents {
  change: [DnsChange];
  /**
   * A resolution failed or found nothing: the last good set stays, and it retries with backoff.
   * Also one SRV target's lookup failing while the others answer: that target keeps its last
   * addresses, the rest of the answer is applied, and it retries with backoff.
   */
  error: [unknown];
}

/** After a TTL, re-resolve no sooner than this (dnsmasq and /etc/hosts answers carry TTL 0). */
export const MIN_TTL_REFRESH_MS = 1_000;
/** First retry after a failed resolution (then doubling, up to `refreshMs`), before jitter. */
export const RETRY_BASE_MS = 1_000;

/**
 * Keeps a balancer's membership equal to what DNS says. See {@link watchDns}.
 *
 * @example
 * const watch = watchDns(balancer, { hostname: 'ingest.internal', port: 8080 });
 * watch.on('change', ({ added, removed }) => log.info({ added, removed }, 'shards changed'));
 * await watch.ready;
 */
export class DnsWatch extends GuardedEmitter<DnsWatchEvents> {
  /** Resolves once the first resolution has been applied; rejects if closed before that. */
  readonly ready: Promise<void>;
  readonly #balancer: DnsMembership<unknown>;
  readonly #options: ResolvedDnsOptions;
  readonly #resolver: Resolver;
  #settleReady: ((error?: unknown) => void) | undefined;
  #closed = false;
  #failures = 0;
  /** SRV target hosts' last addresses, for a lookup that fails while the others answer. */
  readonly #known: KnownHosts = new Map();
  /** The shards the watch's last change set, id → weight in DNS (none before its first). */
  #made = new Map<string, number>();
  #cancelTimer: (() => void) | undefined;
  #unlistenClose: (() => void) | undefined;

  constructor(balancer: DnsMembership<unknown>, options: DnsWatchOptions<unknown>) {
    super();
    if (
      typeof balancer !== 'object' ||
      balancer === null ||
      typeof balancer.setShards !== 'function' ||
      !Array.isArray(balancer.shards) ||
      typeof balancer.clock?.setTimer !== 'function'
    ) {
      throw new ConfigError('balancer', 'must be a Balancer (or an HTTP or S3 balancer)', balancer);
    }
    this.#options = resolveDnsOptions(options);
    this.#balancer = balancer;
    this.#resolver = new Resolver({ timeout: this.#options.timeoutMs, tries: 2 });
    if (this.#options.servers !== undefined) {
      try {
        this.#resolver.setServers(this.#options.servers);
      } catch {
        throw new ConfigError(
          'servers',
          'must be IP addresses with optional ports ("127.0.0.1:5353", "[::1]:53")',
          this.#options.servers,
        );
      }
    }
    // The watch stops with the balancer, at its close, not at its next refresh.
    this.#unlistenClose = (balancer as { [ON_CLOSE]?: (listener: () => void) => () => void })[
      ON_CLOSE
    ]?.(() => this.close());
    this.ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = (error) => (error === undefined ? resolve() : reject(error));
    });
    // Nobody may await `ready`: a close before the first resolution must not be unhandled.
    this.ready.catch(() => {});
    void this.#refresh();
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Stops watching: no further resolution; the balancer keeps its current shards. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unlistenClose?.();
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#resolver.cancel();
    this.#settleReady?.(new Error('the DNS watch was closed before its first resolution'));
    this.#settleReady = undefined;
  }

  async #refresh(): Promise<void> {
    this.#cancelTimer = undefined;
    if (this.#closed) return;
    if (this.#balancerClosed()) {
      this.close();
      return;
    }
    let resolution: Resolution;
    try {
      resolution = await resolveShards(this.#resolver, this.#options.query, this.#known);
    } catch (error) {
      this.#failed(error);
      return;
    }
    if (this.#closed) return;
    // A closed balancer takes no more shards: the watch has nothing left to do.
    if (this.#balancerClosed()) {
      this.close();
      return;
    }
    try {
      this.#apply(resolution.records);
    } catch (error) {
      this.#failed(error);
      return;
    }
    if (resolution.errors.length > 0) {
      // Applied, with the failed targets at their last addresses: reported, and looked up again
      // with the backoff of a failure rather than a whole TTL later.
      for (const error of resolution.errors.slice(1)) this.#report(error);
      this.#failed(resolution.errors[0]);
      return;
    }
    this.#failures = 0;
    const ttl = Math.max(resolution.ttlMs, MIN_TTL_REFRESH_MS);
    this.#schedule(Math.min(this.#options.refreshMs, ttl));
  }

  /** A closed balancer takes no more shards: the watch has nothing left to do. */
  #balancerClosed(): boolean {
    return this.#balancer.closed === true;
  }

  #failed(error: unknown): void {
    if (this.#closed) return;
    // A closed balancer takes no more shards: no more tries (nor errors) for it.
    if (this.#balancerClosed()) {
      this.close();
      return;
    }
    this.#failures++;
    this.#report(error);
    // Exponential backoff with jitter: producers that lost DNS together do not retry together.
    const cap = this.#options.refreshMs;
    const base = Math.min(cap, RETRY_BASE_MS * 2 ** Math.min(this.#failures - 1, 30));
    this.#schedule(base / 2 + (base / 2) * this.#balancer.random());
  }

  #report(error: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    // A background timer: the watch never keeps a process alive.
    this.#cancelTimer = this.#balancer.clock.setTimer(() => void this.#refresh(), ms, true);
  }

  /** Makes the membership the resolved set: only the difference changes; kept shards stay. */
  #apply(records: DnsRecord[]): void {
    const balancer = this.#balancer;
    const wanted = new Map(records.map((r) => [r.id, r]));
    const current = balancer.shards;
    const specs: ShardSpec<unknown>[] = [];
    const change: DnsChange = { added: [], removed: [], reweighted: [] };
    let rescaled = false;
    // Kept shards keep their place (and their target object, so the balancer keeps their state).
    // A shard the watch did not make (one the balancer was built with) takes its target from DNS,
    // even when its id is a resolved address: the watch owns the whole membership.
    for (const shard of current) {
      const r = wanted.get(shard.id);
      if (r === undefined) {
        change.removed.push(shard.id);
        continue;
      }
      wanted.delete(shard.id);
      const dnsWeight = this.#made.get(shard.id);
      if (dnsWeight === undefined) {
        specs.push({ id: r.id, target: this.#targetOf(r), weight: r.weight });
        change.added.push(r.id);
        continue;
      }
      if (dnsWeight !== r.dnsWeight) change.reweighted.push(shard.id);
      // Scaled weights move together: one shard's new weight in DNS moves the others' too.
      if (shard.weight !== r.weight) rescaled = true;
      specs.push(specOf(shard, r.weight));
    }
    // New ones after them, in a stable order (DNS rotates its answers).
    for (const r of [...wanted.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
      specs.push({ id: r.id, target: this.#targetOf(r), weight: r.weight });
      change.added.push(r.id);
    }
    const changed = change.added.length + change.removed.length + change.reweighted.length > 0;
    if (changed || rescaled) {
      balancer.setShards(specs).catch((error: unknown) => this.#report(error));
    }
    this.#made = new Map(records.map((r) => [r.id, r.dnsWeight]));
    this.#settleReady?.();
    this.#settleReady = undefined;
    if (changed && this.listenerCount('change') > 0) this.emit('change', change);
  }

  #targetOf(r: DnsRecord): unknown {
    if (this.#options.target !== undefined) return this.#options.target(r.address, r.port);
    const host = r.address.includes(':') ? `[${r.address}]` : r.address;
    return `${this.#options.scheme}://${host}:${r.port}`;
  }
}

function specOf(shard: ShardState<unknown>, weight: number): ShardSpec<unknown> {
  const spec: ShardSpec<unknown> = { id: shard.id, target: shard.target, weight };
  if (shard.zone !== undefined) spec.zone = shard.zone;
  if (Object.keys(shard.labels).length > 0) spec.labels = { ...shard.labels };
  return spec;
}
