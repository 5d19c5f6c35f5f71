/**
 * A `route` listener that changes the membership while the queue pump routes runs (docs/reference.md:
 * "A listener may also act on the balancer"): the pump read the next run before routing this
 * one, a nested pump parked that run in its home's line, and the outer pump parked it again —
 * its links looped and the balancer spun for ever. Run in a child process, so a hang cannot
 * freeze the test runner.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('a `route` listener that changes the membership while the pump routes runs', () => {
  it('does not hang (run in a child process, killed after 10 s)', () => {
    const script = new URL('../fixtures/route-listener-membership.mts', import.meta.url).pathname;
    const child = spawnSync(process.execPath, ['--import', 'tsx', script], {
      cwd: new URL('../../', import.meta.url).pathname,
      timeout: 10_000,
      encoding: 'utf8',
    });
    expect({ signal: child.signal, stdout: child.stdout.trim() }).toEqual({
      signal: null,
      stdout: 'settled A,B,C,X',
    });
  }, 20_000);
});
