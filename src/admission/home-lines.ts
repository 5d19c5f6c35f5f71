/**
 * Strict affinity's waiting lines: a keyed run whose home shard cannot take it now waits in that
 * shard's own line (Kafka's producer keeps a queue per partition), so other keys keep flowing to
 * their shards — no head-of-line blocking across shards. A line is served when its shard frees a
 * slot, comes back from ejection, or its push-back ends.
 *
 * A line waiting for an ejected shard asks for an early probe (after 250 ms, then 500 ms, 1 s,
 * and every 2 s while probes fail; never before the shard's `Retry-After`): the waiting run itself
 * is the probe, so a shard that restarts in two seconds takes its keys again within about one
 * more, not at the end of a 30 s ejection. Only waiting keyed work asks: unkeyed traffic keeps
 * the ejection's own time.
 */

import type { Clock } from '../base/types.js';
import type { Shard } from '../load/shard.js';
import { RunQueue } from './queue.js';
import type { HomeWait, Run } from './run.js';

/** What the lines need from the balancer. */
export interface HomeLinesHost<T> {
  readonly clock: Clock;
  /** A waiting run's deadline passed while its home was ejected or pushing back. */
  expired(run: Run<T>, waitedMs: number): void;
  /** A shard's push-back ended: serve its line. */
  serve(shard: Shard<T>): void;
  /** Runs wait for ejected `shard`: let one probe through now, before its ejection ends. */
  probeEarly(shard: Shard<T>): void;
}

/** The first early probe of an ejected home with waiting runs, ms; each failed one doubles it. */
export const EARLY_PROBE_FIRST_MS = 250;
/** The longest wait between early probes, ms. */
export const EARLY_PROBE_MAX_MS = 2_000;

export class HomeLines<T> {
  /** Runs waiting in all lines. */
  size = 0;
  readonly #lines = new Map<Shard<T>, RunQueue<Run<T>>>();
  readonly #wakes = new Map<Shard<T>, { atMs: number; cancel: () => void }>();
  /**
   * Early probes asked for, per ejected shard: during which ejection (its count), how many so
   * far, and the next one's timer while runs wait. Kept while the line empties — the waiting run
   * itself leaves it to probe — and counted afresh for a new ejection.
   */
  readonly #probes = new WeakMap<
    Shard<T>,
    { ejection: number; asked: number; cancel: (() => void) | undefined }
  >();

  constructor(private readonly host: HomeLinesHost<T>) {}

  /** Puts `run` at the end (or, for a retry, the front) of `shard`'s line. */
  park(run: Run<T>, shard: Shard<T>, why: HomeWait, first: boolean): void {
    let line = this.#lines.get(shard);
    if (line === undefined) {
      line = new RunQueue<Run<T>>();
      this.#lines.set(shard, line);
    }
    run.wait();
    const keyed = run.keyed!;
    if (keyed.waitSinceMs < 0) keyed.waitSinceMs = this.host.clock.now();
    keyed.waitingAt = shard;
    keyed.waitReason = why;
    if (first) line.unshift(run);
    else line.push(run);
    this.size++;
    if (why !== 'capped') this.#armDeadline(run);
    if (why === 'pushback') this.#wakeAt(shard, shard.pushBack.untilMs);
    if (why === 'ejected') this.#probeSoon(shard);
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
    const probe = this.#probes.get(shard);
    probe?.cancel?.();
    if (probe !== undefined) probe.cancel = undefined;
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
    else this.#probeSoon(shard);
  }

  /**
   * Asks for an early probe of ejected `shard` while runs wait for it: after 250 ms, doubling with
   * each probe asked (a failed one ejects it again) up to 2 s, and never before its push-back
   * ends. The count starts again with each new ejection.
   */
  #probeSoon(shard: Shard<T>): void {
    const ejection = shard.health.ejections;
    let probe = this.#probes.get(shard);
    if (probe === undefined || probe.ejection !== ejection) {
      probe?.cancel?.();
      probe = { ejection, asked: 0, cancel: undefined };
      this.#probes.set(shard, probe);
    } else if (probe.cancel !== undefined) return;
    const clock = this.host.clock;
    const now = clock.now();
    const backoff = Math.min(EARLY_PROBE_MAX_MS, EARLY_PROBE_FIRST_MS * 2 ** probe.asked);
    const atMs = Math.max(now + backoff, shard.pushBack.untilMs);
    const state = probe;
    state.cancel = clock.setTimer(() => {
      state.cancel = undefined;
      if (this.head(shard) === undefined || shard.health.state !== 'ejected') return;
      state.asked++;
      this.host.probeEarly(shard);
    }, atMs - now);
  }

  /**
   * Arms the run's delivery deadline (`deliveryTimeoutMs` from its admission) while it waits for
   * an unavailable home; it is kept when the run moves between lines, so being served again
   * never extends it.
   */
  #armDeadline(run: Run<T>): void {
    const keyed = run.keyed!;
    if (keyed.cancelWait !== undefined || run.deadlineMs === Number.POSITIVE_INFINITY) return;
    const clock = this.host.clock;
    keyed.cancelWait = clock.setTimer(() => {
      keyed.cancelWait = undefined;
      this.host.expired(run, clock.now() - keyed.waitSinceMs);
    }, run.deadlineMs - clock.now());
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
