/**
 * "A record past its attempts … fails with a RetriesExhaustedError whose `attempts` list each send
 * (`shardId`, `error`, `elapsedMs` since its batch opened)" (docs/batching.md). A send the
 * balancer timed out (`timeoutMs`) is a send of every record in the batch, and is counted among
 * their attempts — so it must be listed too. And since that send went out and got no answer, the
 * record may be stored: it ends uncertain, not failed.
 */
import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError, type ShardState, UncertainWriteError } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, type Rec, records, run } from './helpers.js';

describe('a record whose batch send timed out, then was refused until its attempts ran out', () => {
  it('lists every send in RetriesExhaustedError.attempts, the timed-out one included', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      timeoutMs: 10,
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest(records(1), {
        batch: {
          maxRecords: 1,
          lingerMs: 1,
          retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
        },
        send: async (_shard: ShardState<string>, _batch: Rec[]) => {
          sends++;
          // The first send hangs past the attempt's deadline; the next ones refuse the record.
          if (sends === 1) return resolveAfter(clock, 1_000, undefined);
          await resolveAfter(clock, 1, undefined);
          return { failed: [{ index: 0, error: new Error(`refused #${sends}`) }] };
        },
      }),
    );
    expect(sends).toBe(3);
    expect(summary.written).toBe(0);
    expect(summary.failed).toBe(0);
    expect(summary.uncertain).toBe(1); // the timed-out send may have stored it
    expect(summary.retries).toBe(2); // three sends of the record: two beyond the first
    expect(summary.resent).toBe(2); // both sends after the timed-out one may have duplicated it
    const uncertain = summary.failures[0]!.error as UncertainWriteError;
    expect(uncertain).toBeInstanceOf(UncertainWriteError);
    expect(uncertain.uncertain).toBe(true);
    const error = uncertain.cause as RetriesExhaustedError;
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    // Three sends of the record (attempts: 3): the timeout, then two refusals.
    expect(error.attempts.map((a) => (a.error as Error).name)).toEqual([
      'TimeoutError',
      'Error',
      'Error',
    ]);
  });
});
