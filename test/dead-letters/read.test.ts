/**
 * `readDeadLetters`: the records back for a replay (or whole entries), from plain or gzipped
 * files, with positions like any file source; a line that is not a dead letter stops it with a
 * SourceError naming file:line.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Balancer } from '../../src/index.js';
import {
  DeadLetterFile,
  readDeadLetters,
  SOURCE_POSITION,
  SourceError,
} from '../../src/sources/index.js';
import { fileWith, readAll, tempDir } from '../sources/files.js';

const dir = tempDir('dead-letter-read');

async function written(records: unknown[]): Promise<string> {
  const path = fileWith(dir, 'f.ndjson', '');
  const letters = await DeadLetterFile.open(path, { windowMs: 0 });
  await Promise.all(
    records.map((record) => letters.append({ record, error: new Error('no'), outcome: 'failed' })),
  );
  await letters.close();
  return path;
}

describe('readDeadLetters', () => {
  it('yields the records as they were taken, with positions; from resumes after one', async () => {
    const path = await written(['{"id":1}', { id: 2 }, Buffer.from([1, 2, 3])]);
    const all = await readAll(readDeadLetters(path));
    expect(all.map((r) => r.value)).toEqual(['{"id":1}', { id: 2 }, Buffer.from([1, 2, 3])]);
    expect(all.map((r) => r.at.line)).toEqual([1, 2, 3]);
    const rest = await readAll(readDeadLetters(path, { from: all[0]!.at }));
    expect(rest.map((r) => r.value)).toEqual([{ id: 2 }, Buffer.from([1, 2, 3])]);
  });

  it('reads a gzipped dead-letter file, and several files in order', async () => {
    const path = await written([{ id: 1 }]);
    const gz = fileWith(dir, 'f.ndjson.gz', readFileSync(path));
    const records: unknown[] = [];
    for await (const record of readDeadLetters([gz, path])) records.push(record);
    expect(records).toEqual([{ id: 1 }, { id: 1 }]);
  });

  it('a line that is not a dead letter: a SourceError naming file:line', async () => {
    const good = readFileSync(await written([{ id: 1 }]), 'utf8');
    for (const bad of [
      '{"id":2}',
      '[1]',
      '{"record":1,"outcome":"lost","error":{"message":"m"}}',
    ]) {
      const path = fileWith(dir, 'bad.ndjson', `${good}\n${bad}\n`);
      const iterator = readDeadLetters(path)[Symbol.asyncIterator]();
      expect((await iterator.next()).value).toEqual({ id: 1 });
      const error = await iterator.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, bad).toBeInstanceOf(SourceError);
      expect((error as SourceError).file).toBe(path);
      expect((error as SourceError).line).toBe(3);
      expect((error as Error).message).toContain('not a dead-letter line');
      expect(iterator[SOURCE_POSITION]().line).toBe(1);
    }
  });

  it('replays through ingest: each dead-lettered record is sent again', async () => {
    const path = await written(['{"id":1}', '{"id":2}', '{"id":3}']);
    const balancer = new Balancer({ shards: [{ id: 'a', target: 'a' }] });
    const sent: unknown[] = [];
    const summary = await balancer.ingest(readDeadLetters<string>(path), {
      send: async (_shard, record: string) => {
        sent.push(record);
      },
    });
    expect(summary.written).toBe(3);
    expect(sent.sort()).toEqual(['{"id":1}', '{"id":2}', '{"id":3}']);
    await balancer.close();
  });
});
