/**
 * Promise attacked: every run settles exactly once and frees its slot, whatever the user's code
 * does inside the balancer's bookkeeping. Each case plants a callback that throws — an event
 * listener, a `ctx.onAbort` listener (on success and on a timeout), a limit's `onSample`,
 * `retry.retryable`, an `onClose` listener — and checks that the three runs settle as they would have, nothing stays in
 * flight or queued, and each throw reaches the process as an uncaught exception, once per call
 * (it is the caller's bug: not swallowed). Before, each of these left runs hanging forever with
 * their slots taken, and an unhandled rejection.
 *
 * The cases run in a child process (test/hostile/fixtures/throwing-callbacks.ts), where uncaught
 * exceptions can be counted; inside vitest they would fail the run.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/throwing-callbacks.ts', import.meta.url));

interface Outcome {
  results: string[];
  inFlight: number;
  queued: number;
  uncaught: string[];
}

describe('a user callback that throws inside the balancer', () => {
  it('breaks nothing: every run settles, no slot stays taken, and the error is thrown again on its own', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture], {
      timeout: 60_000,
    });
    const outcomes = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, Outcome>;
    const ok = ['ok 0', 'ok 1', 'ok 2'];
    const failed = [0, 1, 2].map((i) => `rejected attempt ${i} failed`);
    const expected: Record<
      string,
      { results: (string | RegExp)[]; bug: string; uncaught?: string[] }
    > = {
      'pick listener': { results: ok, bug: 'pick listener bug' },
      'success listener': { results: ok, bug: 'success listener bug' },
      'failure listener': { results: failed, bug: 'failure listener bug' },
      // The retry still happens: two attempts, then the run fails with both.
      'retry listener': {
        results: [0, 1, 2].map((i) => new RegExp(`after 2 attempts.*attempt ${i} failed$`)),
        bug: 'retry listener bug',
      },
      'onAbort listener': { results: ok, bug: 'onAbort listener bug' },
      'onAbort listener on a timeout': {
        results: [0, 1, 2].map(() => /^rejected attempt timed out after 20 ms/),
        bug: 'onAbort listener bug',
      },
      // The limit keeps its cap; the runs are unaffected.
      'limit onSample': { results: ok, bug: 'limit onSample bug' },
      // A classifier that throws counts as "not retryable": one attempt, its own error.
      'retry.retryable': { results: failed, bug: 'retry.retryable bug' },
      // Thrown at close(), once each, both listeners called.
      'onClose listener': {
        results: ok,
        bug: 'onClose listener bug',
        uncaught: ['onClose listener bug', 'later onClose listener bug'],
      },
    };
    expect(Object.keys(outcomes)).toEqual(Object.keys(expected));
    for (const [name, want] of Object.entries(expected)) {
      const got = outcomes[name]!;
      expect(got.results, name).toHaveLength(3);
      got.results.forEach((result, i) => {
        const pattern = want.results[i]!;
        if (typeof pattern === 'string') expect(result, name).toBe(pattern);
        else expect(result, name).toMatch(pattern);
      });
      expect({ name, inFlight: got.inFlight, queued: got.queued }).toEqual({
        name,
        inFlight: 0,
        queued: 0,
      });
      expect({ name, uncaught: got.uncaught }).toEqual({
        name,
        uncaught: want.uncaught ?? [want.bug, want.bug, want.bug],
      });
    }
  }, 90_000);
});
