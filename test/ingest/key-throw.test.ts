/**
 * Issue #13: a `key()` that threw used to reject the whole `ingest` while admitted records were
 * still being written. Now the record whose key (or size) cannot be computed is reported failed
 * like any other, and the ingestion goes on: an exact account of every record.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, consistentHash } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ids, ManualClock, type Rec, records, run } from './helpers.js';

const noKey = (id: number) => new Error(`record ${id} has no tenant`);

describe('ingest with a key() that throws', () => {
  it('fails those records only, and writes every other one', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { picker: consistentHash() });
    const thrown = new Map<number, Error>();
    const sent: number[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(100), {
        key: (record) => {
          if (record.id % 10 === 3) {
            const error = noKey(record.id);
            thrown.set(record.id, error);
            throw error;
          }
          return `tenant-${record.id % 7}`;
        },
        send: (_shard, record) => {
          sent.push(record.id);
          return resolveAfter(clock, 5, undefined);
        },
      }),
    );
    expect(summary.written).toBe(90);
    expect(summary.failed).toBe(10);
    expect(ids(summary.failures.map((f) => f.record))).toEqual([
      3, 13, 23, 33, 43, 53, 63, 73, 83, 93,
    ]);
    for (const { record, error } of summary.failures) expect(error).toBe(thrown.get(record.id));
    expect(sent.sort((a, b) => a - b)).toEqual(
      records(100)
        .map((r) => r.id)
        .filter((id) => id % 10 !== 3),
    );
  });

  it('reports each of them to onFailed, once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const onFailed: [number, unknown][] = [];
    await run(
      clock,
      balancer.ingest(records(20), {
        key: (record) => {
          if (record.id % 5 === 0) throw noKey(record.id);
          return undefined;
        },
        send: () => resolveAfter(clock, 1, undefined),
        onFailed: (record, error) => onFailed.push([record.id, (error as Error).message]),
      }),
    );
    expect(onFailed.sort((a, b) => a[0] - b[0])).toEqual(
      [0, 5, 10, 15].map((id) => [id, noKey(id).message]),
    );
  });

  it('with batches under consistent hashing: the same account', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { picker: consistentHash(), shards: 3 });
    const sent: number[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(100), {
        batch: { maxRecords: 8, lingerMs: 5 },
        key: (record) => {
          if (record.id % 10 === 3) throw noKey(record.id);
          return `tenant-${record.id % 7}`;
        },
        send: async (_shard: unknown, batch: Rec[]) => {
          for (const r of batch) sent.push(r.id);
          await resolveAfter(clock, 5, undefined);
        },
      }),
    );
    expect(summary.written).toBe(90);
    expect(summary.failed).toBe(10);
    expect(summary.written + summary.failed).toBe(100);
    expect(new Set(sent).size).toBe(90);
    expect(sent.some((id) => id % 10 === 3)).toBe(false);
  });

  it('a key of the wrong type, or a bytes() that throws, fails the record with a named error', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    const summary = await run(
      clock,
      balancer.ingest(records(6), {
        key: (record) => (record.id === 1 ? (42 as unknown as string) : undefined),
        bytes: (record) => {
          if (record.id === 4) throw new Error('cannot measure record 4');
          return 10;
        },
        send: () => resolveAfter(clock, 1, undefined),
      }),
    );
    expect(summary.written).toBe(4);
    expect(summary.bytes).toBe(40);
    const byId = new Map(summary.failures.map((f) => [f.record.id, f.error]));
    expect(byId.get(1)).toBeInstanceOf(ConfigError);
    expect((byId.get(1) as Error).message).toMatch(/`key`/);
    expect((byId.get(4) as Error).message).toBe('cannot measure record 4');
  });
});
