/**
 * `shardwise ingest` and `shardwise replay` against real HTTP shards on 127.0.0.1: lines sent as
 * they are in the files (several, gzipped among them, in order), routed by a field, dead-lettered
 * when refused and replayed from there, uncertain when no answer comes; stopped by a signal —
 * gracefully, then at once — with a checkpoint a second run resumes from, losing nothing. Exit
 * codes 0, 1, 3 and the `--json` summary. (Usage errors, exit code 2: ingest-args.test.ts.)
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadCheckpoint, readDeadLetters } from '../../src/sources/index.js';
import { idsOf, type LineShards, runCli, startLineShards, writeLines } from './load-helpers.js';
import { unwrap } from './run-cli.js';

let dir: string;
let shards: LineShards | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardwise-ingest-'));
});
afterEach(async () => {
  await shards?.close();
  shards = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** Polls `check` every 5 ms for at most `ms`. */
async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function deadLetterEntries(path: string) {
  const entries: { record: unknown; error: { code: string }; outcome: string }[] = [];
  for await (const entry of readDeadLetters(path, { entries: true })) entries.push(entry as never);
  return entries;
}

const sorted = (values: readonly string[]) => [...values].sort();

describe('shardwise ingest', () => {
  it('--compression gzip:6 sends each body gzipped; --json tells the bytes before and as sent', async () => {
    shards = await startLineShards(2);
    const file = join(dir, 'in.jsonl');
    const lines = writeLines(file, 0, 4000);
    const ran = await runCli([
      'ingest',
      file,
      '--to',
      shards.origins.join(','),
      '--compression',
      'gzip:6',
      '--json',
    ]);
    expect(ran.code).toBe(0);
    expect(sorted(shards.lines())).toEqual(sorted(lines));
    const requests = shards.taken.flat();
    expect(requests.length).toBeGreaterThan(0);
    for (const r of requests) expect(r.headers['content-encoding']).toBe('gzip');
    const wire = requests.reduce((n, r) => n + r.wireBytes, 0);
    const summary = JSON.parse(ran.out);
    expect(summary.transit.wire).toBe(wire);
    expect(summary.transit.raw).toBe(lines.reduce((n, l) => n + l.length + 1, 0));
    expect(summary.transit.wire).toBeLessThan(summary.transit.raw / 3);
    const text = await runCli(['ingest', file, '--to', shards.origins[0]!, '--compression', 'br']);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/sent bytes .*x of .*\(compressed\)/);
  });

  it('sends several files in order, .gz among them, the lines untouched: exit 0 and --json', async () => {
    shards = await startLineShards(3);
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl.gz');
    const c = join(dir, 'c.jsonl');
    const lines = [
      ...writeLines(a, 0, 3000),
      ...writeLines(b, 3000, 6000),
      ...writeLines(c, 6000, 9000),
    ];
    const checkpoint = join(dir, 'load.ckpt');
    const ran = await runCli([
      'ingest',
      a,
      b,
      c,
      '--to',
      shards.origins.join(','),
      '--path',
      '/ingest?token=planted-query-secret',
      '--batch',
      '200',
      '--header',
      'Authorization: Bearer planted-header-secret',
      '--checkpoint',
      checkpoint,
      '--json',
    ]);
    expect(ran.code).toBe(0);
    const summary = JSON.parse(ran.out);
    expect(Object.keys(summary)).toEqual([
      'command',
      'status',
      'exitCode',
      'signal',
      'error',
      'written',
      'failed',
      'uncertain',
      'unsent',
      'resent',
      'retries',
      'batches',
      'bytes',
      'transit',
      'durationMs',
      'recordsPerSecond',
      'perShard',
      'files',
      'deadLetter',
      'checkpoint',
    ]);
    expect(summary).toMatchObject({
      command: 'ingest',
      status: 'done',
      exitCode: 0,
      signal: null,
      error: null,
      written: 9000,
      failed: 0,
      uncertain: 0,
      unsent: 0,
      files: [a, b, c],
      deadLetter: null,
      checkpoint: {
        path: checkpoint,
        resumed: false,
        records: 9000,
        written: 9000,
        position: { file: c, fileIndex: 2, offset: statSync(c).size, line: 3000 },
      },
    });
    expect(Object.keys(summary.perShard)).toEqual(shards.origins);
    expect(Object.values(summary.perShard as Record<string, number>).reduce((x, y) => x + y)).toBe(
      9000,
    );
    // Every line once, byte for byte; each request's lines in file order, files in the given order.
    expect(sorted(shards.lines())).toEqual(sorted(lines));
    for (const requests of shards.taken) {
      for (const { lines: batch, headers } of requests) {
        const ids = idsOf(batch);
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
        expect(headers.authorization).toBe('Bearer planted-header-secret');
      }
    }
    // Secrets stay out of everything printed: the header's value, the path's query.
    expect(`${ran.out}${ran.err}`).not.toContain('planted');
    expect(unwrap(ran.err)).toMatch(/^shardwise ingest: done in \d+\.\d s$/m);
    expect(unwrap(ran.err)).toMatch(/^written +9,000 {2}/m);
  });

  it('routes by --key: every record of a key on one shard; one without it is dead-lettered (exit 1)', async () => {
    shards = await startLineShards(4);
    const file = join(dir, 'keyed.jsonl');
    const lines = writeLines(file, 0, 2000, (id) =>
      id % 250 === 7 ? {} : { user: { id: `u${id % 37}` } },
    );
    const dead = join(dir, 'dead.ndjson');
    const ran = await runCli([
      'ingest',
      file,
      '--to',
      shards.origins.join(','),
      '--key',
      'user.id',
      '--dead-letter',
      dead,
      '--json',
    ]);
    expect(ran.code).toBe(1);
    const keyless = lines.filter((l) => !l.includes('"user"'));
    expect(keyless).toHaveLength(8);
    expect(JSON.parse(ran.out)).toMatchObject({
      status: 'done',
      exitCode: 1,
      written: 1992,
      failed: 8,
      deadLetter: { path: dead, records: 8 },
    });
    const entries = await deadLetterEntries(dead);
    expect(sorted(entries.map((e) => e.record as string))).toEqual(sorted(keyless));
    for (const e of entries) expect(e.error.code).toBe('KeyFieldError');
    const homes = new Map<string, Set<number>>();
    shards.taken.forEach((requests, shard) => {
      for (const l of requests.flatMap((r) => r.lines)) {
        const user = (JSON.parse(l) as { user: { id: string } }).user.id;
        homes.set(user, (homes.get(user) ?? new Set()).add(shard));
      }
    });
    expect(homes.size).toBe(37);
    for (const set of homes.values()) expect(set.size).toBe(1);
    expect(new Set([...homes.values()].map((s) => [...s][0])).size).toBeGreaterThan(1);
  });

  it('dead-letters refused lines, none also written (exit 1); replay sends them again (exit 0)', async () => {
    shards = await startLineShards(2);
    const file = join(dir, 'in.jsonl');
    const lines = writeLines(file, 0, 3000, (id) => (id % 301 === 0 ? { poison: true } : {}));
    const poisoned = lines.filter((l) => l.includes('poison'));
    shards.refuse('poison');
    const dead = join(dir, 'dead.ndjson');
    const ran = await runCli([
      'ingest',
      file,
      '--to',
      shards.origins.join(','),
      '--dead-letter',
      dead,
    ]);
    expect(ran.code).toBe(1);
    const out = unwrap(ran.out);
    expect(out).toMatch(new RegExp(`^failed +${poisoned.length}$`, 'm'));
    expect(out).toContain(`dead letters: ${poisoned.length} in ${dead}`);
    const entries = await deadLetterEntries(dead);
    expect(sorted(entries.map((e) => e.record as string))).toEqual(sorted(poisoned));
    for (const e of entries) expect(e.outcome).toBe('failed');
    const stored = new Set(shards.lines());
    for (const e of entries) expect(stored.has(e.record as string)).toBe(false);
    expect(sorted(shards.lines())).toEqual(sorted(lines.filter((l) => !l.includes('poison'))));

    shards.refuse(undefined);
    const again = join(dir, 'again.ndjson');
    const replay = await runCli([
      'replay',
      dead,
      '--to',
      shards.origins.join(','),
      '--dead-letter',
      again,
      '--json',
    ]);
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.out)).toMatchObject({
      command: 'replay',
      written: poisoned.length,
      failed: 0,
      deadLetter: { path: again, records: 0 },
    });
    expect(readFileSync(again, 'utf8')).toBe('');
    expect(sorted(shards.lines())).toEqual(sorted(lines));
  });

  it('counts records sent with no answer as uncertain, and keeps them with --dead-letter-uncertain', async () => {
    shards = await startLineShards(1);
    shards.hang();
    const file = join(dir, 'in.jsonl');
    const lines = writeLines(file, 0, 40);
    const dead = join(dir, 'dead.ndjson');
    const ran = await runCli([
      'ingest',
      file,
      '--to',
      shards.origins[0]!,
      '--timeout',
      '100',
      '--delivery-timeout',
      '1000',
      '--dead-letter',
      dead,
      '--dead-letter-uncertain',
      '--json',
    ]);
    expect(ran.code).toBe(1);
    expect(JSON.parse(ran.out)).toMatchObject({
      status: 'done',
      exitCode: 1,
      written: 0,
      failed: 0,
      uncertain: 40,
      deadLetter: { records: 40 },
    });
    const entries = await deadLetterEntries(dead);
    expect(sorted(entries.map((e) => e.record as string))).toEqual(sorted(lines));
    for (const e of entries) expect(e.outcome).toBe('uncertain');
    expect(unwrap(ran.err)).toMatch(/^uncertain +40 {2}sent, no answer: may be stored$/m);
  });

  it('stops on a file it cannot read, with exit 1 and the error in --json', async () => {
    shards = await startLineShards(1);
    const good = join(dir, 'good.jsonl');
    writeLines(good, 0, 100);
    const cut = join(dir, 'cut.jsonl.gz');
    const whole = gzipSync(Buffer.from(`${'{"id":1}\n'.repeat(50_000)}`));
    writeFileSync(cut, whole.subarray(0, whole.length - 20));
    const ran = await runCli(['ingest', good, cut, '--to', shards.origins[0]!, '--json']);
    expect(ran.code).toBe(1);
    const summary = JSON.parse(ran.out);
    expect(summary).toMatchObject({
      status: 'error',
      exitCode: 1,
      error: { code: 'SHARDWISE_SOURCE' },
    });
    expect(summary.error.message).toContain('could not be decompressed');
    expect(summary.written).toBeGreaterThanOrEqual(100);
  });

  it('stops gracefully on SIGINT: exit 3, a checkpoint and a summary; a second run finishes, 0 lost', async () => {
    shards = await startLineShards(3);
    shards.delay(10);
    const file = join(dir, 'in.jsonl');
    const lines = writeLines(file, 0, 20_000);
    const checkpoint = join(dir, 'load.ckpt');
    const signals = new EventEmitter();
    const args = [
      'ingest',
      file,
      '--to',
      shards.origins.join(','),
      '--batch',
      '100',
      '--checkpoint',
      checkpoint,
    ];
    const first = runCli([...args, '--json'], { signals });
    await shards.until(1_000);
    signals.emit('SIGINT');
    const stopped = await first;
    expect(stopped.code).toBe(3);
    const summary = JSON.parse(stopped.out);
    expect(summary).toMatchObject({
      status: 'stopped',
      exitCode: 3,
      signal: 'SIGINT',
      failed: 0,
      uncertain: 0,
    });
    expect(unwrap(stopped.err)).toContain('SIGINT: stopping — no record more is read');
    expect(unwrap(stopped.err)).toMatch(/^shardwise ingest: stopped by SIGINT after \d+\.\d s$/m);
    expect(unwrap(stopped.err)).toContain(
      'run the same command again to resume from the checkpoint',
    );
    const saved = (await loadCheckpoint(checkpoint))!;
    expect(saved.position!.line).toBeGreaterThan(0);
    expect(saved.position!.line).toBeLessThan(20_000);
    expect(summary.checkpoint.position).toEqual(saved.position);
    // What a resume sends again: the lines stored past the checkpoint.
    const past = idsOf(shards.lines()).filter((id) => id >= saved.position!.line).length;
    expect(signals.listenerCount('SIGINT')).toBe(0);

    shards.delay(0);
    const second = await runCli([...args, '--json'], { signals });
    expect(second.code).toBe(0);
    expect(JSON.parse(second.out)).toMatchObject({
      status: 'done',
      written: 20_000 - saved.position!.line,
      checkpoint: { resumed: true, position: { line: 20_000 } },
    });
    expect(unwrap(second.err)).toContain(
      `resuming after line ${saved.position!.line.toLocaleString('en')}`,
    );
    const stored = idsOf(shards.lines());
    expect(new Set(stored).size).toBe(lines.length); // 0 lost
    expect(stored.length - lines.length).toBe(past); // the duplicates: exactly those
  });

  it('stops at once on a second SIGINT: in flight is abandoned, not dead-lettered, sent again on resume', async () => {
    shards = await startLineShards(2);
    shards.hang();
    const file = join(dir, 'in.jsonl');
    const lines = writeLines(file, 0, 5_000);
    const checkpoint = join(dir, 'load.ckpt');
    const dead = join(dir, 'dead.ndjson');
    const signals = new EventEmitter();
    const args = [
      'ingest',
      file,
      '--to',
      shards.origins.join(','),
      '--checkpoint',
      checkpoint,
      '--dead-letter',
      dead,
      '--json',
    ];
    const first = runCli(args, { signals });
    await until(() => shards!.hung() >= 2);
    signals.emit('SIGINT');
    signals.emit('SIGTERM');
    signals.emit('SIGINT');
    const stopped = await first;
    expect(stopped.code).toBe(3);
    expect(stopped.exited).toEqual([3]); // the third signal leaves (recorded here, not taken)
    const summary = JSON.parse(stopped.out);
    expect(summary).toMatchObject({
      status: 'stopped',
      signal: 'SIGINT',
      written: 0,
      failed: 0,
      uncertain: 0,
    });
    expect(summary.unsent).toBeGreaterThan(0);
    expect(summary.deadLetter).toEqual({ path: dead, records: 0 });
    expect(readFileSync(dead, 'utf8')).toBe('');
    expect(unwrap(stopped.err)).toContain('SIGTERM: stopping at once');
    expect(unwrap(stopped.err)).toMatch(
      /^shardwise ingest: stopped by SIGINT after \d+\.\d s \(at once\)$/m,
    );
    expect(await loadCheckpoint(checkpoint)).toMatchObject({ records: 0, position: undefined });

    shards.heal();
    const second = await runCli(args, { signals });
    expect(second.code).toBe(0);
    expect(sorted(shards.lines())).toEqual(sorted(lines));
  });
});
