/**
 * One home of an ingestion: the shard a group of keyed records lives on (or, for unkeyed records,
 * the one group the picker spreads) — Kafka's per-partition deque of the `RecordAccumulator`. It
 * owns what waits for that shard and nothing else: its open batch, its closed batches in the
 * order they go, how many of its batches are in the balancer, and how many of its records are
 * held. A blocked or slow home holds only these, so it never holds what another home waits for.
 */
import type { ShardUnavailableError } from '../base/errors.js';
import type { Batch } from './batch.js';

export class Home<Rec> {
  /** The batch records join now (closed when full, by its linger, or by a flush). */
  open: Batch<Rec> | undefined = undefined;
  /** When the open batch's linger ends (balancer clock). */
  lingerEndsMs = Number.POSITIVE_INFINITY;
  /** Closed batches waiting to be sent, in the order they go (a retry or a split at the front). */
  readonly ready: Batch<Rec>[] = [];
  /** Its batches handed to the balancer and not settled. */
  running = 0;
  /** Its records taken and not settled (open, ready, running, backing off), and their bytes. */
  held = 0;
  heldBytes = 0;
  /**
   * Set while the home is down: unreachable for a whole delivery timeout. Its records then fail at
   * once with this error, but for one batch at a time that probes it; a write clears it.
   */
  down: ShardUnavailableError | undefined = undefined;
  /** A batch of it could go now but for room in the balancer (the sender's last look). */
  backlogged = false;
  /** Who waits for that backlog to clear (the source, for unkeyed records). */
  drained: { promise: Promise<void>; resolve: () => void } | undefined = undefined;

  constructor(
    /** The shard id of a keyed home ('' for keyed records with no home yet); undefined: unkeyed. */
    readonly id: string | undefined,
  ) {}

  /** Nothing of this home is held: no record, no batch. */
  get idle(): boolean {
    return this.held === 0 && this.open === undefined && this.ready.length === 0;
  }

  /** `count` records (of `bytes`) joined this home. */
  hold(count: number, bytes: number): void {
    this.held += count;
    this.heldBytes += bytes;
  }

  /** `count` records (of `bytes`) of this home settled, or left it for another. */
  release(count: number, bytes: number): void {
    this.held -= count;
    this.heldBytes -= bytes;
  }
}
