/**
 * Strict affinity's waiting lines: a keyed run whose home shard cannot take it now waits in that
 * shard's own line (Kafka's producer keeps a queue per partition), so other keys keep flowing to
 * their shards — no head-of-line blocking across shards. A line is served when its shard frees a
 * slot, comes back from ejection, or its push-back ends.
 */
import { RunQueue } from '../queue.js';
import type { HomeWait, Run } from '../run.js';
import type { Shard } from '../shard.js';
import type { Clock } from '../types.js';

/** What the lines need from the balancer. */
export interface HomeLinesHost<T> {
  readonly clock: Clock;
  /** A waiting run's deadline passed while its home was ejected or pushing back. */
  expired(run: Run<T>, waitedMs: number): void;
  /** A shard's push-back ended: serve its line. */
  serve(shard: Shard<T>): void;
}

export class HomeLines<T> {
  /** Runs waiting in all lines. */
  size = 0;
  readonly #lines = new Map<Shard<T>, RunQueue<Run<T>>>();
  readonly #wakes = new Map<Shard<T>, { atMs: number; cancel: () => void }>();

  constructor(private readonly host: HomeLinesHost<T>) {}

  /** Puts `run` at the end (or, for a retry, the front) of `shard`'s line. */
  park(run: Run<T>, shard: Shard<T>, why: HomeWait, first: boolean): void {
    let line = this.#lines.get(shard);
    if (line === undefined) {
      line = new RunQueue<Run<T>>();
      this.#lines.set(shard, line);
    }
    run.state = 'queued';
    const keyed = run.keyed!;
    if (keyed.waitSinceMs < 0) keyed.waitSinceMs = this.host.clock.now();
    keyed.waitingAt = shard;
    keyed.waitReason = why;
    if (first) line.unshift(run);
    else line.push(run);
    this.size++;
    if (why !== 'capped') this.#armDeadline(run);
    if (why === 'pushback') this.#wakeAt(shard, shard.pushBack.untilMs);
  }

  /** Takes `run` out of its line (it starts, settles, or goes back to routing). */
  leave(run: Run<T>): void {
    const keyed = run.keyed;
    const shard = keyed?.waitingAt;
    if (keyed === undefined || shard === undefined) return;
    keyed.waitingAt = undefined;
    keyed.cancelWait?.();
    keyed.cancelWait = undefined;
    const line = this.#lines.get(shard)!;
    line.remove(run);
    this.size--;
    if (line.size > 0) return;
    this.#lines.delete(shard);
    // Nobody waits for its push-back to end: a wake-up left armed would hold the process open.
    this.#wakes.get(shard)?.cancel();
    this.#wakes.delete(shard);
  }

  /** The first run waiting for `shard`, if any. */
  head(shard: Shard<T>): Run<T> | undefined {
    return this.#lines.get(shard)?.head;
  }

  /** Takes every waiting run out of its line, lines in membership-independent order, each in order. */
  takeAll(): Run<T>[] {
    const all: Run<T>[] = [];
    for (const shard of this.shards()) {
      for (let run = this.head(shard); run !== undefined; run = this.head(shard)) {
        this.leave(run);
        all.push(run);
      }
    }
    return all;
  }

  /** The shards that have a line, for serving them all after a change of health or membership. */
  shards(): Shard<T>[] {
    return [...this.#lines.keys()];
  }

  /**
   * `shard` was ejected or pushes back: its waiting runs (some waited only for a slot) now wait
   * against their deadline; after a push-back the line is served when it ends.
   */
  unavailable(shard: Shard<T>, why: 'ejected' | 'pushback'): void {
    if (this.head(shard) === undefined) return;
    for (let run = this.head(shard); run !== undefined; run = run.next as Run<T> | undefined) {
      run.keyed!.waitReason = why;
      this.#armDeadline(run);
    }
    if (why === 'pushback') this.#wakeAt(shard, shard.pushBack.untilMs);
  }

  /**
   * Arms the run's deadline: `timeoutMs` from the moment it first had to wait for an unavailable
   * home, kept when the run moves between lines (so being served again never extends it).
   */
  #armDeadline(run: Run<T>): void {
    const keyed = run.keyed!;
    if (keyed.cancelWait !== undefined || run.timeoutMs === Number.POSITIVE_INFINITY) return;
    const clock = this.host.clock;
    if (keyed.waitDeadlineMs === Number.POSITIVE_INFINITY)
      keyed.waitDeadlineMs = clock.now() + run.timeoutMs;
    keyed.cancelWait = clock.setTimer(() => {
      keyed.cancelWait = undefined;
      this.host.expired(run, clock.now() - keyed.waitSinceMs);
    }, keyed.waitDeadlineMs - clock.now());
  }

  /**
   * Serves `shard`'s line at `atMs`, or at the end of its push-back if a longer one came since
   * (one wake-up a shard, the earliest; it re-arms itself rather than strand the line).
   */
  #wakeAt(shard: Shard<T>, atMs: number): void {
    const wake = this.#wakes.get(shard);
    if (wake !== undefined && wake.atMs <= atMs) return;
    wake?.cancel();
    const clock = this.host.clock;
    const cancel = clock.setTimer(() => {
      this.#wakes.delete(shard);
      const until = shard.pushBack.untilMs;
      if (until > clock.now() && this.head(shard) !== undefined) this.#wakeAt(shard, until);
      else this.host.serve(shard);
    }, atMs - clock.now());
    this.#wakes.set(shard, { atMs, cancel });
  }
}
