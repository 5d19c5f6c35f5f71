/**
 * The retry decision as a table (retry/policy.ts): a pure function of the error, the attempt,
 * the run's options and the budget, so each row is one exact outcome; and how long a retry waits
 * for push-back, from the shards it may use.
 */
import { describe, expect, it } from 'vitest';
import { PushBackError } from '../../src/base/errors.js';
import { Shard } from '../../src/load/shard.js';
import { type ResolvedRetryOptions, resolveRetryOptions } from '../../src/retry/options.js';
import {
  decideRetry,
  pushBackWait,
  type RetryDecision,
  type RetryInput,
} from '../../src/retry/policy.js';
import { ManualClock } from '../../src/testing/index.js';

const retry = resolveRetryOptions({
  attempts: 3,
  backoff: { baseMs: 100, maxMs: 1_000 },
}) as ResolvedRetryOptions;
const budget = (allows: boolean) => ({
  calls: 0,
  tryWithdraw() {
    this.calls++;
    return allows;
  },
});
const half = () => 0.5;
const base: RetryInput = {
  retryable: true,
  error: new Error('boom'),
  attempt: 1,
  idempotent: true,
  aborted: false,
  pushBackWaitMs: 0,
  deadlineLeftMs: Number.POSITIVE_INFINITY,
};
const notSent = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });

const rows: [string, Partial<RetryInput>, ResolvedRetryOptions | false, boolean, RetryDecision][] =
  [
    ['retries off', {}, false, true, { retry: false, reason: 'retries are off', exhausted: false }],
    [
      'not retryable',
      { retryable: false },
      retry,
      true,
      { retry: false, reason: 'the error is not retryable', exhausted: false },
    ],
    [
      'caller aborted',
      { aborted: true },
      retry,
      true,
      { retry: false, reason: 'the caller aborted', exhausted: false },
    ],
    [
      'not idempotent, may have been sent',
      { idempotent: false },
      retry,
      true,
      {
        retry: false,
        reason: 'the run is not idempotent and the call may have reached the shard',
        exhausted: false,
      },
    ],
    [
      'not idempotent, provably not sent',
      { idempotent: false, error: notSent },
      retry,
      true,
      { retry: true, delayMs: 50 },
    ],
    [
      'push-back proves it was not sent',
      { idempotent: false, error: new PushBackError(10) },
      retry,
      true,
      { retry: true, delayMs: 50 },
    ],
    ['first retry: half of 100 ms', {}, retry, true, { retry: true, delayMs: 50 }],
    ['second retry: half of 200 ms', { attempt: 2 }, retry, true, { retry: true, delayMs: 100 }],
    [
      'attempts used up',
      { attempt: 3 },
      retry,
      true,
      { retry: false, reason: 'all 3 attempts failed', exhausted: true },
    ],
    [
      'every shard pushes back 400 ms',
      { pushBackWaitMs: 400 },
      retry,
      true,
      { retry: true, delayMs: 400 },
    ],
    [
      'push-back shorter than the backoff',
      { pushBackWaitMs: 20 },
      retry,
      true,
      { retry: true, delayMs: 50 },
    ],
    [
      'push-back past the delivery deadline',
      { pushBackWaitMs: 5_000, deadlineLeftMs: 1_000 },
      retry,
      true,
      {
        retry: false,
        reason:
          'every shard it may use pushes back for 5000 ms, past its delivery deadline (1000 ms left)',
        exhausted: true,
        waitMs: 5_000,
      },
    ],
    [
      'a backoff past the delivery deadline',
      { deadlineLeftMs: 10 },
      retry,
      true,
      {
        retry: false,
        reason:
          'its next attempt could start only in 50 ms, past its delivery deadline (10 ms left)',
        exhausted: true,
        waitMs: 50,
      },
    ],
    [
      'a free attempt (push-back) past the attempts: retried, no budget asked',
      { attempt: 3, free: true, tries: 1, error: new PushBackError(10), pushBackWaitMs: 10 },
      retry,
      false,
      { retry: true, delayMs: 50 },
    ],
    [
      'a free attempt whose backoff grows with the tries',
      { attempt: 1, free: true, tries: 3 },
      retry,
      false,
      { retry: true, delayMs: 200 },
    ],
    [
      'budget refuses',
      {},
      retry,
      false,
      {
        retry: false,
        reason: 'the retry budget is exhausted',
        exhausted: true,
        budgetRefused: true,
      },
    ],
  ];

describe('decideRetry', () => {
  it.each(rows)('%s', (_name, input, options, allows, expected) => {
    const b = budget(allows);
    expect(decideRetry({ ...base, ...input }, options, b, half)).toEqual(expected);
  });

  it('asks the budget last, and only when everything else allows a retry (a token is spent)', () => {
    const asked = budget(true);
    decideRetry({ ...base, attempt: 3 }, retry, asked, half);
    decideRetry({ ...base, retryable: false }, retry, asked, half);
    decideRetry({ ...base, pushBackWaitMs: 5_000, deadlineLeftMs: 1 }, retry, asked, half);
    decideRetry({ ...base, free: true }, retry, asked, half);
    expect(asked.calls).toBe(0);
    decideRetry(base, retry, asked, half);
    expect(asked.calls).toBe(1);
  });
});

describe('pushBackWait', () => {
  const shards = ['a', 'b', 'c'].map(
    (id, i) => new Shard<string>({ id, target: id }, i, 4, new ManualClock(), {}),
  );
  const [a, b, c] = shards as [Shard<string>, Shard<string>, Shard<string>];

  it('0 when some shard the run may use does not push back, else the least time left', () => {
    expect(pushBackWait(shards, false, 0)).toBe(0);
    a.holdPushBack(300);
    expect(pushBackWait(shards, false, 0)).toBe(0);
    b.holdPushBack(200);
    c.holdPushBack(500);
    expect(pushBackWait(shards, false, 50)).toBe(150);
    // An ejected shard is no way out outside panic: the wait is the others'; in panic it counts.
    b.health.state = 'ejected';
    expect(pushBackWait(shards, false, 50)).toBe(250);
    expect(pushBackWait(shards, true, 50)).toBe(150);
    // Past every push-back, or with no shard to wait for, nothing is waited.
    expect(pushBackWait(shards, false, 600)).toBe(0);
    expect(pushBackWait([], false, 0)).toBe(0);
  });
});
