/**
 * Durable ingestion: dead letters kept (on disk, or in a sink of the caller's) before a record
 * counts as settled, never a record both written and dead-lettered; a dead letter that cannot be
 * kept stops the ingestion without dropping a record; checkpoints that save the watermark and a
 * load that resumes from one, losing nothing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, DeadLetterError, IngestError, type ShardState } from '../../src/index.js';
import { loadCheckpoint, readDeadLetters, readJsonl } from '../../src/sources/index.js';
import { fleet, ManualClock, type Rec, records, run, settle } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardwise-durable-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** An answer that refuses a batch's data (split down to the record at fault). */
const refused = () => Object.assign(new Error('HTTP 400'), { statusCode: 400, retryable: false });

async function deadLetters(path: string): Promise<unknown[]> {
  const back: unknown[] = [];
  for await (const record of readDeadLetters(path)) back.push(record);
  return back;
}

describe('dead letters', () => {
  it('keep every failed record, once, with its error; none of them was written', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    const path = join(dir, 'dead.ndjson');
    const written = new Set<number>();
    const bad = new Set([3, 17, 42]);
    const summary = await run(
      clock,
      balancer.ingest(records(100), {
        deadLetter: { path },
        batch: { maxRecords: 10 },
        send: async (_s: ShardState<string>, batch: Rec[]) => {
          if (batch.some((r) => bad.has(r.id))) throw refused();
          for (const r of batch) written.add(r.id);
        },
      }),
    );
    expect(summary).toMatchObject({ written: 97, failed: 3, uncertain: 0 });
    const back = (await deadLetters(path)) as Rec[];
    expect(back.map((r) => r.id).sort((a, b) => a - b)).toEqual([3, 17, 42]);
    for (const r of back) expect(written.has(r.id)).toBe(false);
    const entries: { error: { code: string; shard: string | null }; outcome: string }[] = [];
    for await (const entry of readDeadLetters(path, { entries: true }))
      entries.push(entry as never);
    for (const entry of entries) {
      expect(entry.outcome).toBe('failed');
      expect(entry.error.code).toBe('Error');
    }
  });

  it('keep uncertain records only with deadLetterUncertain', async () => {
    for (const deadLetterUncertain of [false, true]) {
      const clock = new ManualClock();
      const balancer = fleet(clock, { shards: 1, timeoutMs: 10 });
      const path = join(dir, `dead-${deadLetterUncertain}.ndjson`);
      const summary = await run(
        clock,
        balancer.ingest(records(4), {
          idempotent: false,
          deadLetter: { path },
          deadLetterUncertain,
          batch: { maxRecords: 4 },
          send: () => new Promise<void>((r) => clock.setTimer(r, 60_000)),
        }),
        200_000,
      );
      expect(summary.uncertain).toBe(4);
      expect((await deadLetters(path)).length).toBe(deadLetterUncertain ? 4 : 0);
    }
  });

  it('go to a sink of the caller’s, each record as it was taken', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    const kept: { record: unknown; outcome: string; code: string }[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(5), {
        deadLetter: {
          write: (record, outcome) => {
            kept.push({ record, outcome: outcome.outcome, code: outcome.error.code });
          },
        },
        batch: { maxRecords: 5 },
        send: async (_s: ShardState<string>, batch: Rec[]) =>
          batch.length > 1 ? { failed: [{ index: 2, retryable: false }] } : undefined,
      }),
    );
    expect(summary).toMatchObject({ written: 4, failed: 1 });
    expect(kept).toEqual([{ record: { id: 2 }, outcome: 'failed', code: 'Error' }]);
  });

  it('that cannot be kept stop the ingestion with a DeadLetterError; no record is dropped', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    let writes = 0;
    const outcome = await settle(
      clock,
      balancer.ingest(records(1_000), {
        deadLetter: {
          write: () => {
            writes++;
            if (writes > 2) throw new Error('disk full');
          },
        },
        batch: { maxRecords: 10 },
        send: async (_s: ShardState<string>, batch: Rec[]) =>
          batch[0]!.id % 100 === 0 ? { failed: [{ index: 0, retryable: false }] } : undefined,
      }),
    );
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: IngestError<Rec> }).error;
    expect(error).toBeInstanceOf(IngestError);
    expect(error.kind).toBe('deadLetter');
    expect(error.cause).toBeInstanceOf(DeadLetterError);
    const { summary } = error;
    // Stopped reading: not the whole source; every record taken is accounted for.
    expect(summary.written + summary.failed).toBeLessThan(1_000);
    expect(summary.failed).toBe(3);
    expect(summary.failures.map((f) => f.record.id)).toEqual([0, 100, 200]);
  });

  it('a path that cannot be written rejects before a record is read', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    let read = 0;
    const source = (function* () {
      read++;
      yield { id: 1 };
    })();
    await expect(
      balancer.ingest(source, {
        deadLetter: { path: join(file, 'dead.ndjson') },
        send: async () => {},
      }),
    ).rejects.toBeInstanceOf(DeadLetterError);
    expect(read).toBe(0);
    await expect(
      balancer.ingest([], { deadLetter: { nope: 1 } as never, send: async () => {} }),
    ).rejects.toThrow(ConfigError);
    await expect(
      balancer.ingest([], { deadLetterUncertain: true, send: async () => {} }),
    ).rejects.toThrow(/deadLetterUncertain/);
  });
});

describe('checkpoints', () => {
  function jsonl(n: number): string {
    const path = join(dir, 'data.jsonl');
    writeFileSync(path, Array.from({ length: n }, (_, id) => `{"id":${id}}\n`).join(''));
    return path;
  }

  it('save the watermark: after a complete load, every record and the end of the file', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    const file = jsonl(1_000);
    const path = join(dir, 'load.ckpt');
    const summary = await run(
      clock,
      balancer.ingest(readJsonl(file), {
        checkpoint: { path, everyMs: 100 },
        batch: { maxRecords: 50 },
        send: async () => {},
      }),
    );
    expect(summary.written).toBe(1_000);
    const saved = await loadCheckpoint(path);
    expect(saved).toMatchObject({ records: 1_000, written: 1_000, failed: 0, files: [file] });
    expect(saved!.position).toMatchObject({ fileIndex: 0, line: 1_000 });
    expect(saved!.position!.offset).toBe(readFileSync(file).length);
  });

  it('a load stopped half way resumes from its checkpoint and sends every record, the rest once', async () => {
    const file = jsonl(2_000);
    const path = join(dir, 'load.ckpt');
    const arrived = new Map<number, number>();
    const send = async (_s: ShardState<string>, batch: string[]) => {
      for (const line of batch) {
        const id = (JSON.parse(line) as Rec).id;
        arrived.set(id, (arrived.get(id) ?? 0) + 1);
      }
    };
    // First run: stopped by its signal after some records.
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    const stop = new AbortController();
    const first = await settle(
      clock,
      balancer.ingest(readJsonl(file), {
        checkpoint: { path, everyMs: 50 },
        signal: stop.signal,
        batch: { maxRecords: 20 },
        send: async (s: ShardState<string>, batch: string[]) => {
          if (arrived.size >= 700) stop.abort(new Error('Ctrl-C'));
          return send(s, batch);
        },
      }),
    );
    expect(first.ok).toBe(false);
    const saved = await loadCheckpoint(path);
    expect(saved).toBeDefined();
    expect(saved!.records).toBeGreaterThan(0);
    expect(saved!.records).toBeLessThan(2_000);
    // Every record below the watermark arrived.
    for (let id = 0; id < saved!.records; id++) expect(arrived.has(id)).toBe(true);
    // Second run, from the checkpoint: the load completes.
    const clock2 = new ManualClock();
    const balancer2 = fleet(clock2, { shards: 2 });
    const second = await run(
      clock2,
      balancer2.ingest(readJsonl(file, { from: saved }), {
        checkpoint: { path, everyMs: 50 },
        from: saved,
        batch: { maxRecords: 20 },
        send,
      }),
    );
    expect(second.failed).toBe(0);
    for (let id = 0; id < 2_000; id++) expect(arrived.has(id)).toBe(true);
    const duplicates = [...arrived.values()].reduce((n, c) => n + c - 1, 0);
    // At most the records sent beyond the watermark (64 a position sample, plus those in flight).
    expect(duplicates).toBeLessThanOrEqual(2_000 - saved!.records);
    const final = await loadCheckpoint(path);
    expect(final).toMatchObject({ records: 2_000, written: saved!.written + second.written });
  });

  it('a source that does not start where `from` says is a ConfigError naming from', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    const file = jsonl(10);
    const from = {
      version: 1 as const,
      position: { file, fileIndex: 0, offset: 8, line: 1 },
      records: 1,
      written: 1,
      failed: 0,
      uncertain: 0,
      savedAt: new Date(0).toISOString(),
    };
    // The source reads from the start, the checkpoint stands after line 1.
    await expect(
      balancer.ingest(readJsonl(file), {
        from,
        checkpoint: { path: join(dir, 'c') },
        send: async () => {},
      }),
    ).rejects.toThrow(/`from` must be where the source starts/);
  });

  it('onCheckpoint tells a source without positions how many records settled in order', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2 });
    const seen: number[] = [];
    let slow = true;
    const summary = await run(
      clock,
      balancer.ingest(records(300), {
        onCheckpoint: (index, position) => {
          expect(position).toBeUndefined();
          seen.push(index);
        },
        batch: { maxRecords: 10 },
        send: async (_s: ShardState<string>, batch: Rec[]) => {
          // Record 0's batch is slow: the watermark waits for it, whatever settles after it.
          if (batch[0]!.id === 0 && slow) {
            slow = false;
            await new Promise<void>((r) => clock.setTimer(r, 3_000));
          }
        },
      }),
    );
    expect(summary.written).toBe(300);
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(300);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThan(seen[i - 1]!);
  });
});
