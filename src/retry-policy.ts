/**
 * Whether a failed attempt is retried, and after how long: a pure decision (apart from drawing
 * the jitter and taking a token from the budget, both passed in) from the error, the attempt and
 * the run's options. The balancer carries it out.
 */
import { RetriesExhaustedError, ShardRemovedError, ShardUnavailableError } from './errors.js';
import { backoffDelay, provesNotSent, type ResolvedRetryOptions } from './health/retry.js';
import type { Run } from './run.js';
import type { Shard } from './shard.js';

/** What the decision is made from. */
export interface RetryInput {
  /** What the classifier said: another shard may do better. */
  retryable: boolean;
  /** The error proves the call never reached the shard (`provesNotSent`). */
  error: unknown;
  /** The attempt that failed, 1 for the first. */
  attempt: number;
  idempotent: boolean;
  /** The caller's signal aborted. */
  aborted: boolean;
  /**
   * How long the next attempt must wait for push-back: 0 when some shard it may use does not push
   * back (a retry elsewhere waits only the backoff), else the least time until one stops.
   */
  pushBackWaitMs: number;
  /** The run's bound on one attempt, ms: no wait before a retry may outlive it. */
  timeoutMs: number;
  /**
   * The balancer ended the attempt itself (its shard was removed without drain): the retry is
   * owed, so it counts neither against `attempts` nor against the budget.
   */
  owed?: boolean;
}

/** Retry after `delayMs`, or settle the run (with `RetriesExhaustedError` when `exhausted`). */
export type RetryDecision =
  | { retry: true; delayMs: number }
  | {
      retry: false;
      reason: string;
      exhausted: boolean;
      budgetRefused?: true;
      /** Set when push-back outlasts the run's `timeoutMs`: how long it holds, ms. */
      pushBackMs?: number;
    };

/** Takes one retry from a budget, or refuses. */
export interface BudgetLike {
  tryWithdraw(): boolean;
}

/**
 * The decision, in order: retries off, not retryable, caller aborted, not idempotent (unless
 * the error proves the call was not sent), attempts used up, a push-back wait longer than the
 * run's `timeoutMs`, the budget (asked last: it spends a token). A retry the balancer owes (it
 * ended the attempt) skips the attempts and the budget.
 *
 * @example
 * decideRetry({ retryable: true, error, attempt: 1, idempotent: true, aborted: false, pushBackWaitMs: 0, timeoutMs: Infinity }, retry, budget, random);
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
  if (input.attempt >= retry.attempts && input.owed !== true) {
    return settle(`all ${retry.attempts} attempts failed`, true);
  }
  // Only a push-back wait is bounded by `timeoutMs` (it bounds one attempt): a backoff is the
  // retry's own pause, however long, and the caller's signal bounds the whole run.
  if (input.pushBackWaitMs > input.timeoutMs) {
    return {
      retry: false,
      reason: `every shard it may use pushes back for ${Math.ceil(input.pushBackWaitMs)} ms, longer than its timeoutMs (${input.timeoutMs})`,
      exhausted: true,
      pushBackMs: input.pushBackWaitMs,
    };
  }
  let delayMs = backoffDelay(input.attempt, retry.baseMs, retry.maxMs, random);
  if (input.pushBackWaitMs > delayMs) delayMs = input.pushBackWaitMs;
  if (budget !== undefined && input.owed !== true && !budget.tryWithdraw()) {
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
 * The decision for `run`'s failed attempt (`pushBackWaitMs`: how long every shard it may use
 * still pushes back). An attempt ended by its shard's removal is owed its retry.
 */
export function decideRunRetry<T>(
  run: Run<T>,
  error: unknown,
  retryable: boolean,
  pushBackWaitMs: number,
  parts: {
    retry: ResolvedRetryOptions | false;
    budget: BudgetLike | undefined;
    random: () => number;
  },
): RetryDecision {
  const owed = error instanceof ShardRemovedError;
  const input: RetryInput = {
    retryable,
    error,
    // Owed attempts (this one, and earlier ones) count neither against `attempts` nor the backoff.
    attempt: run.attempt - run.owed,
    idempotent: run.idempotent,
    aborted: run.signal?.aborted === true,
    pushBackWaitMs,
    timeoutMs: run.timeoutMs,
    owed,
  };
  if (owed) run.owed++;
  return decideRetry(input, parts.retry, parts.budget, parts.random);
}

function settle(reason: string, exhausted = false): RetryDecision {
  return { retry: false, reason, exhausted };
}

/** Remembers a failed attempt on the run: its record (for `RetriesExhaustedError`), its shard as tried. */
export function noteFailure<T>(run: Run<T>, shard: Shard<T>, error: unknown, nowMs: number): void {
  const record = { shardId: shard.id, error, elapsedMs: nowMs - run.admittedMs };
  if (run.records === undefined) run.records = [record];
  else run.records.push(record);
  if (run.tried === undefined) run.tried = [shard];
  else run.tried.push(shard);
}

/**
 * What a run that will not be retried settles with: its error as it is after a single attempt
 * that was not retried by choice, `ShardUnavailableError` for a strict keyed run whose `home`
 * pushes back past its `timeoutMs`, else `RetriesExhaustedError` holding every attempt.
 */
export function finalError<T>(
  run: Run<T>,
  error: unknown,
  decision: { reason: string; exhausted: boolean; pushBackMs?: number },
  home?: Shard<T>,
): unknown {
  const { reason, exhausted, pushBackMs } = decision;
  if (home !== undefined && pushBackMs !== undefined) {
    return new ShardUnavailableError(home.id, 0, 'pushback', pushBackMs);
  }
  const records = run.records ?? [];
  if (!exhausted && records.length <= 1) return error;
  const rule =
    run.requirement === undefined
      ? ''
      : `; its rule (${run.requirement.text}) allows no other shard`;
  return new RetriesExhaustedError(records, `${reason}${rule}`);
}
