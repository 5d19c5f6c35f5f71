/**
 * Whether a failed attempt is retried, and after how long: a pure decision (apart from drawing
 * the jitter and taking a token from the budget, both passed in) from the error, the attempt and
 * the run's options. The balancer carries it out.
 */
import {
  type AttemptRecord,
  PushBackError,
  RetriesExhaustedError,
  ShardRemovedError,
  ShardUnavailableError,
} from '../base/errors.js';
import type { CompiledRequirement } from '../base/types.js';
import type { Shard } from '../load/shard.js';
import { backoffDelay, provesNotSent, type ResolvedRetryOptions } from './options.js';

/**
 * What the retry decision reads and keeps of a run (a dispatcher's `Run` is one): the policy
 * needs no more of it, and so sits below the room that owns runs.
 */
export interface RetryingRun<T> {
  readonly attempt: number;
  /** Attempts the balancer ended itself (a shard removed without drain). */
  owed: number;
  /** Attempts that spent none of `retry.attempts`. */
  free: number;
  readonly idempotent: boolean;
  readonly signal: AbortSignal | undefined;
  /** Past this balancer-clock time the run waits no more. */
  readonly deadlineMs: number;
  /** The run's own retry rule; undefined: the balancer's. */
  readonly retry: ResolvedRetryOptions | false | undefined;
  readonly admittedMs: number;
  readonly requirement: CompiledRequirement | undefined;
  records: AttemptRecord[] | undefined;
  tried: Shard<T>[] | undefined;
}

/** What the decision is made from. */
export interface RetryInput {
  /** What the classifier said: another shard may do better. */
  retryable: boolean;
  /** The error proves the call never reached the shard (`provesNotSent`). */
  error: unknown;
  /** The attempts counted against `retry.attempts` so far, this one included (1 for the first). */
  attempt: number;
  idempotent: boolean;
  /** The caller's signal aborted. */
  aborted: boolean;
  /**
   * How long the next attempt must wait for push-back: 0 when some shard it may use does not push
   * back (a retry elsewhere waits only the backoff), else the least time until one stops.
   */
  pushBackWaitMs: number;
  /** Time left before the run's delivery deadline, ms: no wait before a retry may outlive it. */
  deadlineLeftMs: number;
  /**
   * The attempt spends none of `retry.attempts` and none of the budget: the balancer ended it
   * itself (its shard was removed without drain), the shard pushed back, or a strict keyed run's
   * home could not be reached. Such retries are bounded by the delivery deadline alone.
   */
  free?: boolean;
  /** Tries so far, for the backoff's growth (default `attempt`). */
  tries?: number;
}

/** Retry after `delayMs`, or settle the run (with `RetriesExhaustedError` when `exhausted`). */
export type RetryDecision =
  | { retry: true; delayMs: number }
  | {
      retry: false;
      reason: string;
      exhausted: boolean;
      budgetRefused?: true;
      /** Set when the next attempt could start only past the delivery deadline: the wait, ms. */
      waitMs?: number;
    };

/** Takes one retry from a budget, or refuses. */
export interface BudgetLike {
  tryWithdraw(): boolean;
}

/**
 * The decision, in order: retries off, not retryable, caller aborted, not idempotent (unless
 * the error proves the call was not sent), attempts used up (not for a free attempt), a wait
 * (backoff or push-back) that would end past the delivery deadline, the budget (asked last: it
 * spends a token; not for a free attempt).
 *
 * @example
 * decideRetry({ retryable: true, error, attempt: 1, idempotent: true, aborted: false, pushBackWaitMs: 0, deadlineLeftMs: 120_000 }, retry, budget, random);
 * // → { retry: true, delayMs: 31.2 }
 */
export function decideRetry(
  input: RetryInput,
  retry: ResolvedRetryOptions | false,
  budget: BudgetLike | undefined,
  random: () => number,
): RetryDecision {
  if (retry === false) return settle('retries are off');
  if (!input.retryable) return settle('the error is not retryable');
  if (input.aborted) return settle('the caller aborted');
  if (!input.idempotent && !provesNotSent(input.error)) {
    return settle('the run is not idempotent and the call may have reached the shard');
  }
  const free = input.free === true;
  if (input.attempt >= retry.attempts && !free) {
    return settle(`all ${retry.attempts} attempts failed`, true);
  }
  let delayMs = backoffDelay(input.tries ?? input.attempt, retry.baseMs, retry.maxMs, random);
  if (input.pushBackWaitMs > delayMs) delayMs = input.pushBackWaitMs;
  if (delayMs > input.deadlineLeftMs) {
    const why =
      input.pushBackWaitMs >= delayMs
        ? `every shard it may use pushes back for ${Math.ceil(input.pushBackWaitMs)} ms`
        : `its next attempt could start only in ${Math.ceil(delayMs)} ms`;
    return {
      retry: false,
      reason: `${why}, past its delivery deadline (${Math.max(0, Math.floor(input.deadlineLeftMs))} ms left)`,
      exhausted: true,
      waitMs: delayMs,
    };
  }
  if (budget !== undefined && !free && !budget.tryWithdraw()) {
    return {
      retry: false,
      reason: 'the retry budget is exhausted',
      exhausted: true,
      budgetRefused: true,
    };
  }
  return { retry: true, delayMs };
}

/**
 * True when a failed attempt spends none of `retry.attempts`: it was ended by the balancer (its
 * shard removed without drain), the shard pushed back (load, not failure), or — for a run that
 * may use one shard alone (`strict`: a keyed run's home) — the call never reached it. Ingestion
 * counts a batch's sends by the same rule.
 */
export function spendsNoAttempt(error: unknown, strict: boolean): boolean {
  return (
    error instanceof ShardRemovedError ||
    error instanceof PushBackError ||
    (strict && provesNotSent(error))
  );
}

/**
 * The decision for `run`'s failed attempt (`pushBackWaitMs`: how long every shard it may use
 * still pushes back; `strict`: the run may use one shard alone, its keyed home). The run's own
 * `retry` (and its opting out of the budget) wins over the balancer's.
 */
export function decideRunRetry<T>(
  run: RetryingRun<T>,
  error: unknown,
  retryable: boolean,
  pushBackWaitMs: number,
  nowMs: number,
  strict: boolean,
  parts: {
    retry: ResolvedRetryOptions | false;
    budget: BudgetLike | undefined;
    random: () => number;
  },
): RetryDecision {
  const owed = error instanceof ShardRemovedError;
  const free = spendsNoAttempt(error, strict);
  if (owed) run.owed++;
  if (free) run.free++;
  const retry = run.retry ?? parts.retry;
  const input: RetryInput = {
    retryable,
    error,
    attempt: run.attempt - run.free,
    idempotent: run.idempotent,
    aborted: run.signal?.aborted === true,
    pushBackWaitMs,
    deadlineLeftMs: run.deadlineMs - nowMs,
    free,
    // Owed attempts do not grow the backoff: the balancer ended them, not the shard.
    tries: Math.max(1, run.attempt - run.owed),
  };
  const budget = retry !== false && retry.budget === false ? undefined : parts.budget;
  return decideRetry(input, retry, budget, parts.random);
}

/**
 * How long a retry must wait for push-back, given the `shards` it may use (its rule's members;
 * ejected ones are no way out unless in `panic`): 0 when one of them does not push back now, else
 * the least time until one stops. A tried shard counts: when every untried one pushes back, the
 * tried ones that do not are offered. A retry waits for push-back only when every shard it could
 * use asked for it.
 */
export function pushBackWait<T>(
  shards: readonly Shard<T>[],
  panic: boolean,
  nowMs: number,
): number {
  let wait = Number.POSITIVE_INFINITY;
  for (const shard of shards) {
    if (shard.health.state === 'ejected' && !panic) continue;
    const left = shard.pushBack.untilMs - nowMs;
    if (left <= 0) return 0;
    if (left < wait) wait = left;
  }
  return wait === Number.POSITIVE_INFINITY ? 0 : wait;
}

function settle(reason: string, exhausted = false): RetryDecision {
  return { retry: false, reason, exhausted };
}

/** Remembers a failed attempt on the run: its record (for `RetriesExhaustedError`), its shard as tried. */
export function noteFailure<T>(
  run: RetryingRun<T>,
  shard: Shard<T>,
  error: unknown,
  nowMs: number,
): void {
  const record = { shardId: shard.id, error, elapsedMs: nowMs - run.admittedMs };
  if (run.records === undefined) run.records = [record];
  else run.records.push(record);
  if (run.tried === undefined) run.tried = [shard];
  else run.tried.push(shard);
}

/**
 * What a run that will not be retried settles with: its error as it is after a single attempt
 * that was not retried by choice, `ShardUnavailableError` for a strict keyed run whose `home`
 * could take it only past its delivery deadline, else `RetriesExhaustedError` holding every
 * attempt.
 */
export function finalError<T>(
  run: RetryingRun<T>,
  error: unknown,
  decision: { reason: string; exhausted: boolean; waitMs?: number },
  nowMs: number,
  home?: Shard<T>,
): unknown {
  const { reason, exhausted, waitMs } = decision;
  if (home !== undefined && waitMs !== undefined) {
    const why = home.pushedBackAt(nowMs) ? 'pushback' : 'unreachable';
    const deliveryTimeoutMs = run.deadlineMs - run.admittedMs;
    return new ShardUnavailableError(home.id, nowMs - run.admittedMs, why, deliveryTimeoutMs);
  }
  const records = run.records ?? [];
  if (!exhausted && records.length <= 1) return error;
  const rule =
    run.requirement === undefined
      ? ''
      : `; its rule (${run.requirement.text}) allows no other shard`;
  return new RetriesExhaustedError(records, `${reason}${rule}`);
}
