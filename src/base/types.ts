/**
 * The shapes every layer shares. This file imports nothing but other type files: implementations
 * import it, never the other way round.
 */

/**
 * Monotonic time and timers. Every delay the balancer waits — timeouts, backoff, ejection expiry,
 * push-back — goes through it, so a virtual clock (`ManualClock` in `shardwise/testing`) drives
 * them all.
 *
 * @example
 * const clock: Clock = { now: () => performance.now(), setTimer: (fn, ms) => { const t = setTimeout(fn, ms); return () => clearTimeout(t); } };
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences matter). */
  now(): number;
  /**
   * Calls `fn` once after `ms` milliseconds; the returned function cancels it. `background`
   * timers (ejection expiry) must not keep the process alive; the others (timeouts, backoff) must.
   */
  setTimer(fn: () => void, ms: number, background?: boolean): () => void;
}

/** A uniform random source in [0, 1). */
export type RandomSource = () => number;

/** A key routes a run to a shard under hashing pickers. */
export type Key = string | Uint8Array;

/** How a shard is described to the balancer. */
export interface ShardSpec<T = unknown> {
  /** Unique, stable id: load figures, hashing and stats follow it. */
  id: string;
  /** What your `run` function talks to: a URL, a client, a bucket. The balancer never reads it. */
  target: T;
  /** Relative capacity, a positive finite number (default 1). */
  weight?: number;
  /** A failure domain or locality, for your own use and for routing rules. */
  zone?: string;
  /** Free-form labels (`{ region: 'eu' }`), for routing rules. */
  labels?: Record<string, string>;
}

/**
 * A shard as pickers see it: identity plus live load figures. Read-only: the balancer measures,
 * pickers decide (figures are kept by `load/`, never written by a picker).
 */
export interface ShardState<T = unknown> {
  readonly id: string;
  readonly target: T;
  readonly weight: number;
  readonly zone: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  /** Position in the balancer's membership order (stable while membership is). */
  readonly index: number;
  /** Calls outstanding on this shard now. */
  readonly inFlight: number;
  /** Bytes outstanding on this shard now (runs that declared `bytes`). */
  readonly bytesInFlight: number;
  /** Current in-flight cap of this shard (a fixed cap scaled by weight, or an adaptive limit). */
  readonly limit: number;
  /** Peak-EWMA round-trip estimate in ms, decayed to now (`defaultRttMs` before any sample). */
  readonly rttMs: number;
  /**
   * Load for count-based pickers: `inFlight` plus the load the shard reports about itself (while
   * fresh), plus a large penalty while the shard pushes back
   * (429, SlowDown, Retry-After), so a pushed-back shard is chosen only when every other is too.
   */
  readonly load: number;
  /** The last load the shard reported about itself (e.g. `x-shard-load`), if any. */
  readonly reportedLoad?: number | undefined;
  /**
   * Peak-EWMA cost: `rttMs × (inFlight + 1 + reported load)`, plus the same push-back penalty (Finagle, Linkerd,
   * tower). Lower is better.
   */
  readonly cost: number;
  /** The shard's latest ORCA load report (`endpoint-load-metrics`, `reportLoad`), if any. */
  readonly loadReport?: LoadReport | undefined;
}

/**
 * A shard's latest load report (ORCA figures), as pickers read it from `ShardState.loadReport`.
 * The object is the shard's own record, updated in place by the next report: read it, do not
 * keep it.
 *
 * @example
 * const report = shard.loadReport;
 * const fresh = report !== undefined && now - report.atMs < 180_000;
 */
export interface LoadReport {
  /** Utilization of the shard as it sees it (1 = fully busy). */
  readonly cpuUtilization: number;
  /** Requests per second the shard serves, from all its clients. */
  readonly rpsFractional: number;
  /** Errors per second the shard returns, from all its clients. */
  readonly eps: number;
  /** Balancer clock time of the latest report, ms. */
  readonly atMs: number;
  /** Balancer clock time of the shard's first report, ms. */
  readonly firstAtMs: number;
  /**
   * Balancer clock time of the first report after the latest silence of at least `gapMs` between
   * two reports (the first report when there was none): when reports resumed after expiring.
   */
  streakStartMs?(gapMs: number): number;
}

/** What a picker is told about one pick. The object is reused: read it, do not keep it. */
export interface PickRequest {
  /** The run's routing key, if any. */
  key?: Key | undefined;
  /** 1 for the first try, 2 for the first retry, … */
  attempt: number;
  /** The balancer's random source, in [0, 1). */
  random: RandomSource;
  /** Calls in flight across all shards of the balancer now (for bounded-load hashing). */
  totalInFlight: number;
  /**
   * The balancer clock's time of this pick, ms (set by the `Balancer` on every pick; a request
   * built by hand may leave it out).
   */
  now?: number;
}

/**
 * A load-balancing strategy. `pick` is a pure choice among the shards offered: they are healthy,
 * below their cap and not excluded for this attempt, in membership order.
 *
 * @example
 * const first: Picker = { name: 'first', pick: (shards) => shards[0] };
 */
export interface Picker {
  readonly name: string;
  /** Choose among `shards`; `undefined` means none fits. Must return one of `shards`. */
  pick(shards: readonly ShardState[], request: PickRequest): ShardState | undefined;
  /** Called with the full membership when it or a weight changes; stateful pickers rebuild here. */
  rebuild?(shards: readonly ShardState[]): void;
  /**
   * True for pickers that route by key (consistent hashing). Such a picker throws
   * `MissingKeyError` from `pick` for a run without a key (unless it has a `fallback`).
   */
  readonly keyed?: boolean;
  /**
   * Keyed pickers: the picker for runs without a key. Without one, such runs reject with
   * `MissingKeyError`, and an ingestion without a `key` option is refused before it starts.
   */
  readonly fallback?: Picker | undefined;
  /** Peak-EWMA estimator settings this picker wants the balancer to measure with. */
  readonly ewma?: EwmaOptions;
  /** Keys sent past their first choice (bounded loads); reported as `stats().spills`. */
  readonly spills?: number;
  /**
   * Keyed pickers: `'strict'` (the default for keyed pickers) — a keyed run waits for and retries
   * on its key's home shard and never goes elsewhere; `'spill'` — it may go to the next shard of
   * the key's order when its home is at its cap, ejected or already tried. The balancer enforces
   * it (with `home()`); `pick()` itself always walks the key's order.
   *
   * @example
   * consistentHash().affinity; // 'strict'
   * consistentHash({ boundedLoad: 1.25 }).affinity; // 'spill'
   */
  readonly affinity?: 'strict' | 'spill';
  /**
   * Keyed pickers: the key's home among `shards` — the first shard of the key's own order that
   * is in `shards` (a subset of the membership, in membership order), ignoring load bounds.
   * Pure: counts no spill, changes nothing. `undefined` when `shards` is empty.
   *
   * @example
   * const home = picker.home?.(membership, 'customer-42'); // where 'customer-42' belongs
   */
  home?(shards: readonly ShardState[], key: Key): ShardState | undefined;
}

/** Settings of the Peak-EWMA latency estimator (Finagle, Linkerd). */
export interface EwmaOptions {
  /** Time constant of the decay, ms (default 10 000). */
  decayMs?: number;
  /** Estimate used before a shard's first sample, ms (default 30, as in Linkerd). */
  defaultRttMs?: number;
}

/** Why a keyed attempt ran somewhere other than its key's home shard. */
export type DisplacementReason = 'capped' | 'ejected' | 'retry' | 'bounded';

/** Displaced keyed attempts, by reason. */
export interface DisplacedCounts {
  total: number;
  /** The home was at its in-flight cap. */
  capped: number;
  /** The home was ejected by outlier detection. */
  ejected: number;
  /** The attempt was a retry and the home had been tried. */
  retry: number;
  /** The home was at the bounded-load limit (`consistentHash({ boundedLoad })`). */
  bounded: number;
}

/**
 * Bytes of request and response bodies, as transports report them (headers and framing are not
 * counted): `stats().bytes`, per shard, per tier and per `transitLabel` value.
 */
export interface TransitBytes {
  /** Request bodies before compression. */
  raw: number;
  /** Request bodies as sent (after compression): what left for the shards. */
  wire: number;
  /** Response bodies as received. */
  received: number;
}

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
