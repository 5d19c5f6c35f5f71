/**
 * The transit ledger: the bytes each attempt put on the wire and took off it, as its transport
 * (or a user's `send`) reports them through the attempt's context — per shard, in total, per
 * `prefer` tier and per value of the balancer's `transitLabel`. It counts; it decides nothing.
 */
import type { EventEmitter } from 'eventemitter3';
import { ConfigError } from '../base/errors.js';
import type { BalancerEvents } from '../base/events.js';
import type { TransitBytes } from '../base/types.js';
import type { Shard } from './shard.js';

export type { TransitBytes } from '../base/types.js';

/** What a body is called when no content-encoding applies. */
export const IDENTITY = 'identity';

export function noBytes(): TransitBytes {
  return { raw: 0, wire: 0, received: 0 };
}

export class TransitLedger {
  readonly total: TransitBytes = noBytes();
  /** Per `prefer` tier, in tier order (empty without tiers). */
  readonly tiers: TransitBytes[] = [];
  /** Per value of `label` (shards without the label are in the totals only). */
  readonly values = new Map<string, TransitBytes>();

  constructor(
    /** The shard label the ledger is broken down by (`transitLabel`), if any. */
    readonly label: string | undefined,
    private readonly events: EventEmitter<BalancerEvents>,
  ) {}

  /** Starts the per-tier figures (`tiers` tiers plus the last, implicit one). */
  useTiers(tiers: number): void {
    for (let t = 0; t <= tiers; t++) this.tiers.push(noBytes());
  }

  /** An attempt on `shard` (in `tier`, −1 without tiers) sent a body. */
  sent(
    shard: Shard<unknown>,
    tier: number,
    attempt: number,
    rawBytes: number,
    wireBytes: number,
    encoding: string | undefined,
  ): void {
    if (!(byteCount(rawBytes) && byteCount(wireBytes))) {
      throw new ConfigError(
        'ctx.reportSent(rawBytes, wireBytes)',
        'takes two finite numbers ≥ 0',
        byteCount(rawBytes) ? wireBytes : rawBytes,
      );
    }
    checkEncoding('ctx.reportSent(…, encoding)', encoding);
    add(this.total, rawBytes, wireBytes, 0);
    add(shard.transit, rawBytes, wireBytes, 0);
    if (tier >= 0) add(this.tiers[tier]!, rawBytes, wireBytes, 0);
    const bucket = this.#bucket(shard);
    if (bucket !== undefined) add(bucket, rawBytes, wireBytes, 0);
    if (this.events.listenerCount('transit') > 0) {
      this.events.emit('transit', {
        shardId: shard.id,
        attempt,
        tier: tier < 0 ? undefined : tier,
        direction: 'sent',
        bytes: wireBytes,
        rawBytes,
        encoding: encoding ?? IDENTITY,
      });
    }
  }

  /** An attempt on `shard` received a response body of `bytes`. */
  received(
    shard: Shard<unknown>,
    tier: number,
    attempt: number,
    bytes: number,
    encoding: string | undefined,
  ): void {
    if (!byteCount(bytes)) {
      throw new ConfigError('ctx.reportReceived(bytes)', 'takes a finite number ≥ 0', bytes);
    }
    checkEncoding('ctx.reportReceived(…, encoding)', encoding);
    add(this.total, 0, 0, bytes);
    add(shard.transit, 0, 0, bytes);
    if (tier >= 0) add(this.tiers[tier]!, 0, 0, bytes);
    const bucket = this.#bucket(shard);
    if (bucket !== undefined) add(bucket, 0, 0, bytes);
    if (this.events.listenerCount('transit') > 0) {
      this.events.emit('transit', {
        shardId: shard.id,
        attempt,
        tier: tier < 0 ? undefined : tier,
        direction: 'received',
        bytes,
        rawBytes: bytes,
        encoding: encoding ?? IDENTITY,
      });
    }
  }

  /** The figures of `shard`'s value of the label (a zone is the label `zone`, as rules read it). */
  #bucket(shard: Shard<unknown>): TransitBytes | undefined {
    const label = this.label;
    if (label === undefined) return undefined;
    const value = shard.labels[label] ?? (label === 'zone' ? shard.zone : undefined);
    if (value === undefined) return undefined;
    let bucket = this.values.get(value);
    if (bucket === undefined) {
      bucket = noBytes();
      this.values.set(value, bucket);
    }
    return bucket;
  }

  /** `stats().transit`: `{ [label]: { [value]: bytes } }`, empty without a `transitLabel`. */
  snapshotLabels(): Record<string, Record<string, TransitBytes>> {
    if (this.label === undefined) return {};
    const values: Record<string, TransitBytes> = {};
    for (const [value, bytes] of this.values) values[value] = { ...bytes };
    return { [this.label]: values };
  }
}

function byteCount(value: unknown): boolean {
  return typeof value === 'number' && value >= 0 && value < Number.POSITIVE_INFINITY;
}

function add(to: TransitBytes, raw: number, wire: number, received: number): void {
  to.raw += raw;
  to.wire += wire;
  to.received += received;
}

/** An encoding name: a short token (it becomes a metric attribute). */
function checkEncoding(field: string, encoding: unknown): void {
  if (
    encoding !== undefined &&
    (typeof encoding !== 'string' || encoding.length === 0 || encoding.length > 64)
  ) {
    throw new ConfigError(field, 'must be a content-encoding name such as "gzip"', encoding);
  }
}
