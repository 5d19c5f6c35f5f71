import type { ShardView } from '../base/events.js';
import type {
  Clock,
  DisplacedCounts,
  EwmaOptions,
  LoadReport,
  ShardSpec,
  ShardState,
  TransitBytes,
} from '../base/types.js';
import { HealthRecord } from '../health/record.js';
import type { ConcurrencyLimit } from '../limits/types.js';
import { PeakEwma } from './ewma.js';
import { FailureRate } from './failures.js';
import { InFlight } from './inflight.js';
import { LoadReportStore } from './load-report.js';
import { PushBack } from './pushback.js';
import { ReportedLoad } from './reported.js';

/**
 * The balancer's record of one shard: identity, load figures (kept by `load/`), a health record
 * (kept by `health/`) and its counters (kept by `stats`). Pickers see it through the read-only
 * `ShardState` interface. It *is* its in-flight counter (extends `InFlight`) rather than holding
 * one: the count is read on every pick, and a field of the shard itself is one memory load fewer
 * than a field of another object.
 */
export class Shard<T = unknown> extends InFlight implements ShardState<T> {
  readonly id: string;
  readonly target: T;
  weight: number;
  zone: string | undefined;
  labels: Readonly<Record<string, string>>;
  index: number;
  limit: number;

  /** The adaptive limit that sets `limit`, if any. */
  readonly limiter: ConcurrencyLimit | undefined;
  readonly ewma: PeakEwma;
  readonly pushBack: PushBack;
  readonly reported: ReportedLoad;
  readonly failureRate: FailureRate;
  /** ORCA load reports (`endpoint-load-metrics`, `Balancer.reportLoad`), for load-report pickers. */
  readonly loadReports: LoadReportStore;
  readonly health = new HealthRecord();
  private readonly clock: Clock;

  /** Index of the first `prefer` tier the shard belongs to (the last tier when none). */
  tier = 0;
  removed = false;
  /**
   * The shard has failed, pushed back or reported its own load at least once; until then its
   * load is its in-flight count and no figure needs the clock.
   */
  signalled = false;
  requests = 0;
  failures = 0;
  successes = 0;
  /** Keyed attempts whose home this shard was, sent elsewhere (by reason). */
  readonly displaced: DisplacedCounts = { total: 0, capped: 0, ejected: 0, retry: 0, bounded: 0 };
  /** Bytes its attempts reported sending and receiving (kept by the transit ledger). */
  readonly transit: TransitBytes = { raw: 0, wire: 0, received: 0 };

  constructor(
    spec: ShardSpec<T>,
    index: number,
    limit: number | ConcurrencyLimit,
    clock: Clock,
    ewma: EwmaOptions,
  ) {
    super();
    this.id = spec.id;
    this.target = spec.target;
    this.weight = spec.weight ?? 1;
    this.zone = spec.zone;
    this.labels = Object.freeze({ ...(spec.labels ?? {}) });
    this.index = index;
    this.limiter = typeof limit === 'number' ? undefined : limit;
    this.limit = typeof limit === 'number' ? limit : Math.max(1, Math.floor(limit.limit));
    this.clock = clock;
    this.ewma = new PeakEwma(clock, ewma);
    this.pushBack = new PushBack(clock);
    this.reported = new ReportedLoad(clock);
    this.failureRate = new FailureRate(this.ewma.decayMs);
    this.loadReports = new LoadReportStore(clock);
  }

  /** Probe calls in flight (0 or 1), counted only while the shard is probing. */
  private probes = 0;

  get inFlight(): number {
    return this.count;
  }

  get bytesInFlight(): number {
    return this.bytes;
  }

  get rttMs(): number {
    return this.ewma.valueMs;
  }

  get load(): number {
    // Until a shard has failed, pushed back or reported load, its load is its in-flight count.
    if (!this.signalled) return this.count;
    const now = this.clock.now();
    return (
      (this.count + 1 + this.reported.currentAt(now)) * this.failureRate.factorAt(now) -
      1 +
      this.pushBack.penaltyAt(now)
    );
  }

  get cost(): number {
    const now = this.clock.now();
    const rtt = this.ewma.valueAt(now);
    if (!this.signalled) return rtt * (this.count + 1);
    return (
      rtt * (this.count + 1 + this.reported.currentAt(now)) * this.failureRate.factorAt(now) +
      this.pushBack.penaltyAt(now)
    );
  }

  get reportedLoad(): number | undefined {
    return this.reported.last;
  }

  get loadReport(): LoadReport | undefined {
    return this.loadReports.latest;
  }

  /** The shard as events show it: identity and figures, never its target. */
  view(): ShardView {
    const { id, index, weight, zone, labels, limit } = this;
    return {
      id,
      index,
      weight,
      zone,
      labels,
      inFlight: this.count,
      bytesInFlight: this.bytes,
      limit,
    };
  }

  /**
   * Below its cap; a probing shard takes one probe at a time, whatever calls from before its
   * ejection still run (they are not the probe, and must not keep it from being sent).
   */
  get hasRoom(): boolean {
    return this.count < this.limit && (this.health.state !== 'probing' || this.probes === 0);
  }

  /** Starts an attempt; true when it is the probe of a probing shard (its outcome decides). */
  startAttempt(bytes: number): boolean {
    this.start(bytes);
    if (this.health.state !== 'probing') return false;
    this.probes++;
    return true;
  }

  /** Ends an attempt (`probe`: what {@link startAttempt} said of it). */
  endAttempt(bytes: number, probe: boolean): void {
    this.end(bytes);
    if (probe) this.probes--;
  }

  /** The shard asked for `ms` of relief (429, SlowDown, Retry-After): its cost rises that long. */
  holdPushBack(ms: number): void {
    this.signalled = true;
    this.pushBack.hold(ms);
  }

  /** True while the shard's last push-back holds, at time `nowMs`. */
  pushedBackAt(nowMs: number): boolean {
    return nowMs < this.pushBack.untilMs;
  }

  /** Feeds the load the shard reported about itself (a transport calls this; pickers never do). */
  reportLoad(value: number): void {
    this.signalled = true;
    this.reported.report(value);
  }

  /** An attempt ended: feeds the failure rate (failures count against the shard's cost). */
  recordOutcome(failed: boolean, nowMs: number): void {
    if (failed) this.signalled = true;
    else if (!this.signalled) return;
    this.failureRate.record(failed, nowMs);
  }
}
