import type {
  Attributes,
  BatchObservableCallback,
  Meter,
  MeterProvider,
  Observable,
} from '@opentelemetry/api';
import { ConfigError, isShardwiseError } from '../base/errors.js';
import type {
  EjectEvent,
  FailureEvent,
  RetryEvent,
  RouteEvent,
  ShardEvent,
  SuccessEvent,
  TransitEvent,
} from '../base/events.js';
import { checkKnownKeys, checkObject } from '../base/validate.js';
import type { Balancer } from '../core/balancer.js';

/**
 * Where the instruments are created: a `MeterProvider` (a meter named `shardwise` is taken from
 * it) or a `Meter`.
 *
 * @example
 * instrument(balancer, { meter: metrics.getMeter('ingest-job') });
 * // Two balancers on one Meter: tell their figures apart.
 * instrument(orders, { meter, attributes: { 'shardwise.balancer': 'orders' } });
 */
export type InstrumentOptions = ({ meterProvider: MeterProvider } | { meter: Meter }) & {
  /**
   * Added to every measurement (string, number or boolean values; the `shardwise.shard`,
   * `shardwise.outcome`, `shardwise.reason`, `shardwise.tier`, `shardwise.encoding` and
   * `shardwise.direction` keys are the instrument's own). Needed when
   * several balancers publish through one Meter: their gauges would otherwise overwrite each
   * other (the same attribute sets, last one observed wins).
   */
  attributes?: Attributes;
};

/** An attempt's outcome, the `shardwise.outcome` attribute. */
export type AttemptOutcome = 'success' | 'failure' | 'timeout' | 'push_back';

/** What `instrument` reads of a balancer: its public events and `stats()`. */
export type InstrumentedBalancer = Pick<Balancer<any>, 'on' | 'off' | 'stats'>;

const SHARD = 'shardwise.shard';
const OUTCOME = 'shardwise.outcome';
const REASON = 'shardwise.reason';
const TIER = 'shardwise.tier';
const ENCODING = 'shardwise.encoding';
const DIRECTION = 'shardwise.direction';
const DISPLACED = 'displaced:';

/** One shard's attribute sets: its own, and by outcome and by reason. */
interface ShardSets {
  plain: Attributes;
  [OUTCOME]: Map<string, Attributes>;
  [REASON]: Map<string, Attributes>;
}

/**
 * Publishes a balancer's figures as OpenTelemetry metrics, from its public events and `stats()`:
 *
 * | instrument | kind | attributes |
 * | --- | --- | --- |
 * | `shardwise.attempts` | counter | `shardwise.shard`, `shardwise.outcome` (success, failure, timeout, push_back) |
 * | `shardwise.retries` | counter | `shardwise.shard` (the shard whose attempt failed) |
 * | `shardwise.ejections` | counter | `shardwise.shard` |
 * | `shardwise.displaced` | counter | `shardwise.shard` (the key's home), `shardwise.reason` (capped, ejected, retry, bounded) |
 * | `shardwise.bytes` | counter, By | `shardwise.shard`, `shardwise.tier` (with `prefer` tiers), `shardwise.encoding` (gzip, zstd, br, identity), `shardwise.direction` (sent, received) |
 * | `shardwise.attempt.duration` | histogram, s | `shardwise.shard`, `shardwise.outcome` |
 * | `shardwise.in_flight` | observable gauge | `shardwise.shard` |
 * | `shardwise.limit` | observable gauge | `shardwise.shard` (a shard that left: 0 once, then gone) |
 * | `shardwise.queue.size` | observable gauge | — |
 *
 * An attempt is counted when it ends (an attempt the caller aborted has no outcome and is not
 * counted). `shardwise.bytes` counts body bytes as they travelled — sent after compression,
 * received as they came — when the transport reports them (`transit` events); the bytes before
 * compression are in `stats().bytes.raw`. `@opentelemetry/api` is an optional peer: this module imports only its types. Returns
 * `detach()`, which stops every instrument (idempotent).
 *
 * @example
 * import { MeterProvider } from '@opentelemetry/sdk-metrics';
 * import { instrument } from 'shardwise/otel';
 * const detach = instrument(balancer, { meterProvider: new MeterProvider({ readers: [reader] }) });
 * // … later
 * detach();
 */
export function instrument(balancer: InstrumentedBalancer, options: InstrumentOptions): () => void {
  if (
    typeof balancer !== 'object' ||
    balancer === null ||
    typeof balancer.on !== 'function' ||
    typeof balancer.stats !== 'function'
  ) {
    throw new ConfigError('balancer', 'must be a Balancer', balancer);
  }
  const meter = meterOf(options);
  const base = baseAttributes((options as { attributes?: unknown }).attributes);
  const attempts = meter.createCounter('shardwise.attempts', {
    description: 'Attempts that ended, by shard and outcome',
    unit: '{attempt}',
  });
  const retries = meter.createCounter('shardwise.retries', {
    description: 'Retries started, by the shard whose attempt failed',
    unit: '{retry}',
  });
  const ejections = meter.createCounter('shardwise.ejections', {
    description: 'Outlier ejections, by shard',
    unit: '{ejection}',
  });
  const displaced = meter.createCounter('shardwise.displaced', {
    description: 'Keyed attempts sent away from their home shard, by reason',
    unit: '{attempt}',
  });
  const duration = meter.createHistogram('shardwise.attempt.duration', {
    description: 'Duration of attempts, by shard and outcome',
    unit: 's',
    advice: {
      explicitBucketBoundaries: [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
      ],
    },
  });
  const bytes = meter.createCounter('shardwise.bytes', {
    description:
      'Request and response body bytes on the wire, by shard, tier, encoding and direction',
    unit: 'By',
  });
  const inFlight = meter.createObservableGauge('shardwise.in_flight', {
    description: 'Calls in flight, by shard',
    unit: '{call}',
  });
  const limit = meter.createObservableGauge('shardwise.limit', {
    description: 'In-flight cap, by shard',
    unit: '{call}',
  });
  const queueSize = meter.createObservableGauge('shardwise.queue.size', {
    description: 'Runs waiting for a slot',
    unit: '{run}',
  });

  // Attribute sets are kept per shard (and outcome, reason): an event allocates none. Only for
  // members and the shards seen at the last collection, though: a shard that leaves is forgotten
  // once it is observed at 0 (or at once, if no collection saw it), so ids that come and go —
  // a DNS answering fresh addresses — cannot grow the cache. A departed shard's late events (its
  // calls draining) build their sets afresh.
  const cache = new Map<string, ShardSets>();
  /** Ids of the members, from `stats()` at each collection and membership events in between. */
  const members = new Set<string>(balancer.stats().shards.map((s) => s.id));
  /** Shard ids observed at the last collection. */
  let observed = new Set<string>();
  const attrs = (shardId: string, key?: string, value?: string): Attributes => {
    let sets = cache.get(shardId);
    if (sets === undefined) {
      const plain: Attributes = { ...base, [SHARD]: shardId };
      if (!members.has(shardId) && !observed.has(shardId)) {
        return key === undefined ? plain : { ...plain, [key]: value! };
      }
      sets = { plain, [OUTCOME]: new Map(), [REASON]: new Map() };
      cache.set(shardId, sets);
    }
    if (key === undefined) return sets.plain;
    const byValue = sets[key as typeof OUTCOME | typeof REASON];
    let set = byValue.get(value!);
    if (set === undefined) {
      set = { ...sets.plain, [key]: value! };
      byValue.set(value!, set);
    }
    return set;
  };
  const onAdded = (e: ShardEvent) => members.add(e.shardId);
  const onRemoved = (e: ShardEvent) => {
    members.delete(e.shardId);
    // Never observed: no gauge of it to bring to 0, nothing to keep.
    if (!observed.has(e.shardId)) {
      cache.delete(e.shardId);
      const prefix = `${e.shardId}\u0000`;
      for (const id of transitSets.keys()) if (id.startsWith(prefix)) transitSets.delete(id);
    }
  };

  const onSuccess = (e: SuccessEvent) => {
    const a = attrs(e.shardId, OUTCOME, 'success');
    attempts.add(1, a);
    duration.record(e.latencyMs / 1_000, a);
  };
  const onFailure = (e: FailureEvent) => {
    const a = attrs(e.shardId, OUTCOME, outcomeOf(e.error));
    attempts.add(1, a);
    duration.record(e.latencyMs / 1_000, a);
  };
  const onRetry = (e: RetryEvent) => retries.add(1, attrs(e.shardId));
  const onEject = (e: EjectEvent) => ejections.add(1, attrs(e.shardId));
  const onRoute = (e: RouteEvent) => {
    // Counted against the key's home, as `stats().shards[].displaced` counts them.
    if (e.reason.startsWith(DISPLACED)) {
      displaced.add(1, attrs(e.home ?? e.shardId, REASON, e.reason.slice(DISPLACED.length)));
    }
  };
  // Transit sets, per shard, tier, encoding and direction: members only, as above.
  const transitSets = new Map<string, Attributes>();
  const onTransit = (e: TransitEvent) => {
    const id = `${e.shardId}\u0000${e.tier ?? ''}\u0000${e.encoding}\u0000${e.direction}`;
    let set = transitSets.get(id);
    if (set === undefined) {
      set = { ...attrs(e.shardId), [ENCODING]: e.encoding, [DIRECTION]: e.direction };
      if (e.tier !== undefined) set[TIER] = e.tier;
      if (members.has(e.shardId) || observed.has(e.shardId)) transitSets.set(id, set);
    }
    bytes.add(e.bytes, set);
  };
  const observe: BatchObservableCallback = (result) => {
    const stats = balancer.stats();
    result.observe(queueSize, stats.queued, base);
    members.clear();
    for (const shard of stats.shards) members.add(shard.id);
    for (const shard of stats.shards) {
      const a = attrs(shard.id);
      result.observe(inFlight, shard.inFlight, a);
      result.observe(limit, shard.limit, a);
    }
    // A shard that left is observed once more, at 0 in flight and a cap of 0 (it takes nothing):
    // a cumulative reader would repeat its last figures for ever otherwise (the SDK keeps
    // attribute sets it saw), and a dashboard summing the caps would count a shard that is gone.
    // Then forgotten.
    for (const id of observed) {
      if (members.has(id)) continue;
      const a = attrs(id);
      result.observe(inFlight, 0, a);
      result.observe(limit, 0, a);
    }
    observed = new Set(members);
    // The cache now holds members only (a removal missed between collections is caught here).
    for (const id of cache.keys()) if (!members.has(id)) cache.delete(id);
    for (const id of transitSets.keys()) {
      if (!members.has(id.slice(0, id.indexOf('\u0000')))) transitSets.delete(id);
    }
  };
  const observables: Observable[] = [inFlight, limit, queueSize];

  balancer.on('success', onSuccess);
  balancer.on('failure', onFailure);
  balancer.on('retry', onRetry);
  balancer.on('eject', onEject);
  balancer.on('route', onRoute);
  balancer.on('shardAdded', onAdded);
  balancer.on('shardRemoved', onRemoved);
  balancer.on('transit', onTransit);
  meter.addBatchObservableCallback(observe, observables);

  let attached = true;
  return () => {
    if (!attached) return;
    attached = false;
    balancer.off('success', onSuccess);
    balancer.off('failure', onFailure);
    balancer.off('retry', onRetry);
    balancer.off('eject', onEject);
    balancer.off('route', onRoute);
    balancer.off('shardAdded', onAdded);
    balancer.off('shardRemoved', onRemoved);
    balancer.off('transit', onTransit);
    meter.removeBatchObservableCallback(observe, observables);
  };
}

/** The `shardwise.outcome` of a failed attempt. */
export function outcomeOf(error: unknown): AttemptOutcome {
  if (isShardwiseError(error, 'SHARDWISE_TIMEOUT')) return 'timeout';
  if (isShardwiseError(error, 'SHARDWISE_PUSH_BACK')) return 'push_back';
  return 'failure';
}

function meterOf(options: InstrumentOptions): Meter {
  checkObject('instrument options', options);
  checkKnownKeys('instrument options', options, ['meterProvider', 'meter', 'attributes']);
  const o = options as { meterProvider?: MeterProvider; meter?: Meter };
  if ((o.meterProvider === undefined) === (o.meter === undefined)) {
    throw new ConfigError(
      'meterProvider',
      'or `meter` is required, and only one of them',
      o.meterProvider,
    );
  }
  if (o.meter !== undefined) return checkMeter('meter', 'must be an OpenTelemetry Meter', o.meter);
  if (typeof o.meterProvider?.getMeter !== 'function') {
    throw new ConfigError(
      'meterProvider',
      'must be an OpenTelemetry MeterProvider',
      o.meterProvider,
    );
  }
  return checkMeter(
    'meterProvider',
    'must be an OpenTelemetry MeterProvider (its getMeter() gave no Meter)',
    o.meterProvider.getMeter('shardwise'),
  );
}

/** What `instrument` calls on a Meter: all of it, checked before any is called. */
const METER_METHODS = [
  'createCounter',
  'createHistogram',
  'createObservableGauge',
  'addBatchObservableCallback',
  'removeBatchObservableCallback',
] as const;

function checkMeter(field: string, expectation: string, meter: unknown): Meter {
  const m = meter as Record<string, unknown> | null | undefined;
  const missing = METER_METHODS.filter((name) => typeof m?.[name] !== 'function');
  if (missing.length > 0) {
    throw new ConfigError(field, `${expectation}: it has no ${missing.join(', ')}`, meter);
  }
  return meter as Meter;
}

const OWN_KEYS = new Set([SHARD, OUTCOME, REASON, TIER, ENCODING, DIRECTION]);

/** `options.attributes`, checked and copied (a later change by the caller is not seen). */
function baseAttributes(value: unknown): Attributes {
  if (value === undefined) return {};
  checkObject('attributes', value);
  const out: Attributes = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (OWN_KEYS.has(key)) {
      throw new ConfigError(`attributes.${key}`, "is the instrument's own attribute", v);
    }
    if (
      typeof v !== 'string' &&
      typeof v !== 'boolean' &&
      !(typeof v === 'number' && Number.isFinite(v))
    ) {
      throw new ConfigError(
        `attributes.${key}`,
        'must be a string, a finite number or a boolean',
        v,
      );
    }
    out[key] = v;
  }
  return out;
}
