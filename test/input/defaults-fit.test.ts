import { describe, expect, it } from 'vitest';
import { Balancer } from '../../src/index.js';

/**
 * A bound the caller gives must not collide with a default they never wrote: the error would
 * name their (valid) value and blame a field they did not set. test/input/option-edges.test.ts
 * holds this for `aimd({ min: 20 })` ("the default initial fits itself into [min, max], as
 * gradient() does"); the same holds for retry backoff and ingest batch holds.
 */
const shards = [{ id: 'a', target: 0 }];
const send = async () => {};

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('a default fits the bound the caller gave', () => {
  it('retry: { backoff: { maxMs: 10 } } is valid (waits capped at 10 ms; the default baseMs fits under it)', () => {
    // today: ConfigError "`retry.backoff.maxMs` must be ≥ retry.backoff.baseMs (50), got 10"
    const error = thrown(
      () => void new Balancer({ shards, retry: { backoff: { maxMs: 10 } } }).close(),
    );
    expect(error).toBeUndefined();
  });

  it('ingest batch: { maxHeldRecords: 100 } is valid (the default maxRecords fits under it)', async () => {
    const balancer = new Balancer({ shards });
    // today: rejects "`ingest.batch.maxHeldRecords` must be at least maxRecords (500) …, got 100"
    const outcome = await balancer.ingest([1, 2, 3], { send, batch: { maxHeldRecords: 100 } }).then(
      (s) => s.written,
      (e: unknown) => String(e),
    );
    await balancer.close();
    expect(outcome).toBe(3);
  });

  it('ingest batch: { retry: { backoff: { maxMs: 10 } } } is valid, as the balancer retry is', async () => {
    const balancer = new Balancer({ shards });
    // today: rejects "`ingest.batch.retry.backoff.maxMs` must be ≥ backoff.baseMs (50), got 10"
    const outcome = await balancer
      .ingest([1, 2, 3], { send, batch: { retry: { backoff: { maxMs: 10 } } } })
      .then(
        (s) => s.written,
        (e: unknown) => String(e),
      );
    await balancer.close();
    expect(outcome).toBe(3);
  });
});
