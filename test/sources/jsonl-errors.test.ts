/**
 * `readJsonl` refusing what it must not read: a `from` that no longer fits the files (a
 * ConfigError naming `from`), a file that cannot be read, a corrupt `.gz`, an endless line, a line
 * that is not JSON (a SourceError naming file:line — and never quoting the line).
 */
import { truncateSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Balancer, ConfigError, IngestError } from '../../src/index.js';
import { readJsonl, SOURCE_POSITION, SourceError } from '../../src/sources/index.js';
import { fileWith, readAll, tempDir } from './files.js';

const dir = tempDir('jsonl-errors');
const TWO = '{"n":1}\n{"n":2}\n'; // positions after each: 8, 16

/** The error `promise` rejects with (it must reject). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('a from that no longer fits the files', () => {
  it('another file at its index: a ConfigError naming from.file, at the call', () => {
    const a = fileWith(dir, 'a.jsonl', TWO);
    const error = caught(() =>
      readJsonl(a, { from: { file: `${dir}/other.jsonl`, fileIndex: 0, offset: 8, line: 1 } }),
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('from.file');
    expect((error as Error).message).toContain('the list of files changed');
  });

  it('an index past the files: a ConfigError naming from.fileIndex', () => {
    const a = fileWith(dir, 'a.jsonl', TWO);
    const error = caught(() => readJsonl([a], { from: { fileIndex: 1, offset: 0, line: 0 } }));
    expect((error as ConfigError).field).toBe('from.fileIndex');
  });

  for (const name of ['short.jsonl', 'short.jsonl.gz']) {
    it(`a file shorter than the offset (${name}): the first next() rejects with a ConfigError naming from`, async () => {
      const file = fileWith(dir, name, TWO);
      const source = readJsonl(file, { from: { fileIndex: 0, offset: 17, line: 2 } });
      const error = await rejection(source[Symbol.asyncIterator]().next());
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('from');
      expect((error as Error).message).toContain('past the end');
    });

    it(`an offset inside a line (${name}): a ConfigError naming from`, async () => {
      const file = fileWith(dir, name, TWO);
      const error = await rejection(
        readAll(readJsonl(file, { from: { fileIndex: 0, offset: 5, line: 1 } })),
      );
      expect((error as ConfigError).field).toBe('from');
      expect((error as Error).message).toContain('does not fall at the end of a line');
    });
  }

  it('an offset at the very end of a file whose last line has no newline is its end, not an error', async () => {
    const a = fileWith(dir, 'a.jsonl', '{"n":1}\n{"n":2}');
    const b = fileWith(dir, 'b.jsonl', '{"n":3}\n');
    const from = { fileIndex: 0, offset: 15, line: 2 };
    expect((await readAll(readJsonl([a, b], { from }))).map((r) => r.value)).toEqual(['{"n":3}']);
  });

  it('a checkpoint is taken as it is: its files must match, up to its position’s file', async () => {
    const a = fileWith(dir, 'a.jsonl', TWO);
    const b = fileWith(dir, 'b.jsonl', TWO);
    const checkpoint = {
      version: 1 as const,
      position: { file: a, fileIndex: 0, offset: 8, line: 1 },
      records: 1,
      written: 1,
      failed: 0,
      uncertain: 0,
      savedAt: '2025-01-01T00:00:00.000Z',
      files: [a, b],
    };
    expect((await readAll(readJsonl([a, b], { from: checkpoint }))).length).toBe(3);
    // Files after the checkpoint's file may change (a load may grow)…
    expect((await readAll(readJsonl([a], { from: checkpoint }))).length).toBe(1);
    // …the ones up to it may not.
    const error = caught(() =>
      readJsonl([a, b], { from: { ...checkpoint, files: [`${dir}/x.jsonl`, b] } }),
    );
    expect((error as ConfigError).field).toBe('from.files');
    // A checkpoint with no position (nothing settled yet) reads from the start.
    const fresh = { ...checkpoint, position: undefined, records: 0, written: 0 };
    expect((await readAll(readJsonl([a, b], { from: fresh }))).length).toBe(4);
    // Its position past the end names from.position.
    const past = { ...checkpoint, position: { ...checkpoint.position, offset: 99 } };
    const late = await rejection(readAll(readJsonl([a, b], { from: past })));
    expect((late as ConfigError).field).toBe('from.position');
  });

  it('a from with unknown or wrong fields is a ConfigError naming the field', () => {
    const a = fileWith(dir, 'a.jsonl', TWO);
    const cases: [unknown, string][] = [
      [{ fileIndex: 0, offset: 8, line: 1, ofset: 3 }, 'from.ofset'],
      [{ fileIndex: 0, offset: -1, line: 1 }, 'from.offset'],
      [{ fileIndex: 0.5, offset: 0, line: 0 }, 'from.fileIndex'],
      [{ version: 2, position: null }, 'from.version'],
      ['a.jsonl:8', 'from'],
    ];
    for (const [from, field] of cases) {
      const error = caught(() => readJsonl(a, { from: from as never }));
      expect(error, field).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
  });
});

describe('errors while reading', () => {
  it('a missing file: a SourceError naming it; ingest stops with it as a source error', async () => {
    const missing = `${dir}/missing.jsonl`;
    const error = await rejection(readAll(readJsonl(missing)));
    expect(error).toBeInstanceOf(SourceError);
    expect((error as SourceError).file).toBe(missing);
    expect((error as Error).message).toContain(missing);
    const balancer = new Balancer({ shards: [{ id: 'a', target: 'a' }] });
    const stopped = await rejection(balancer.ingest(readJsonl(missing), { send: async () => {} }));
    expect(stopped).toBeInstanceOf(IngestError);
    expect((stopped as IngestError).kind).toBe('source');
    expect((stopped as Error).cause).toBeInstanceOf(SourceError);
    await balancer.close();
  });

  it('a corrupt or cut-short .gz: a SourceError naming the file and the line it reached', async () => {
    const body = Array.from({ length: 2000 }, (_, i) => `{"n":${i}}`).join('\n');
    const zipped = gzipSync(body);
    const cut = fileWith(dir, 'cut.jsonl', '');
    writeFileSync(cut.replace(/\.jsonl$/, '.jsonl.gz'), zipped);
    const cutGz = cut.replace(/\.jsonl$/, '.jsonl.gz');
    truncateSync(cutGz, Math.floor(zipped.length / 2));
    const flipped = Buffer.from(zipped);
    for (let i = 40; i < 60; i++) flipped[i] = flipped[i]! ^ 0xff;
    const bad = fileWith(dir, 'bad.jsonl', '').replace(/\.jsonl$/, '.jsonl.gz');
    writeFileSync(bad, flipped);
    for (const file of [cutGz, bad]) {
      const seen: unknown[] = [];
      const iterator = readJsonl(file, { chunkBytes: 256 })[Symbol.asyncIterator]();
      let error: unknown;
      try {
        for (;;) {
          const next = await iterator.next();
          if (next.done === true) break;
          seen.push(next.value);
        }
      } catch (e) {
        error = e;
      }
      expect(error, file).toBeInstanceOf(SourceError);
      expect((error as SourceError).file).toBe(file);
      expect((error as SourceError).line).toBe(seen.length + 1);
      expect((error as Error).message).toContain('could not be decompressed');
      expect(seen.length).toBeLessThan(2000);
      // A failed source is done.
      expect(await iterator.next()).toEqual({ done: true, value: undefined });
    }
  });

  for (const chunkBytes of [8, 1 << 20]) {
    it(`a line longer than maxLineBytes: a SourceError naming its line (chunkBytes ${chunkBytes})`, async () => {
      const file = fileWith(dir, 'long.jsonl', `"${'x'.repeat(48)}"\n"${'y'.repeat(49)}"\n`);
      // 50 bytes is the limit: the first line (50) passes, the second (51) does not.
      const iterator = readJsonl(file, { maxLineBytes: 50, chunkBytes })[Symbol.asyncIterator]();
      expect((await iterator.next()).value).toHaveLength(50);
      const error = await rejection(iterator.next());
      expect(error).toBeInstanceOf(SourceError);
      expect((error as SourceError).line).toBe(2);
      expect((error as Error).message).toContain('maxLineBytes (50 bytes)');
    });
  }

  it('a line that is not JSON (parse: true): a SourceError naming file:line, quoting nothing of it', async () => {
    const secret = 'hunter2-very-secret';
    const file = fileWith(dir, 'bad.jsonl', `{"n":1}\n\n{"password":"${secret}", oops}\n{"n":4}\n`);
    const iterator = readJsonl(file, { parse: true })[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ n: 1 });
    const error = await rejection(iterator.next());
    expect(error).toBeInstanceOf(SourceError);
    expect((error as SourceError).line).toBe(3);
    expect((error as Error).message).toMatch(/bad\.jsonl:3: not valid JSON/);
    expect(
      JSON.stringify({ ...(error as object), message: (error as Error).message }),
    ).not.toContain('hunter2');
    expect((error as Error).cause).toBeUndefined();
    // The position stays after the last good record: a resume starts at the bad line.
    expect(iterator[SOURCE_POSITION]()).toEqual({ file, fileIndex: 0, offset: 8, line: 1 });
    // Read as strings, the same line passes through (the caller decides).
    expect((await readAll(readJsonl(file))).length).toBe(3);
  });
});

describe('readJsonl options', () => {
  it('rejects unknown and invalid options with a ConfigError naming the field', () => {
    const a = fileWith(dir, 'a.jsonl', TWO);
    const cases: [() => unknown, string][] = [
      [() => readJsonl(a, { prase: true } as never), 'prase'],
      [() => readJsonl(a, { parse: 'yes' } as never), 'parse'],
      [() => readJsonl(a, { chunkBytes: 0 }), 'chunkBytes'],
      [() => readJsonl(a, { maxLineBytes: 1.5 }), 'maxLineBytes'],
      [() => readJsonl([]), 'paths'],
      [() => readJsonl([a, ''] as string[]), 'paths[1]'],
      [() => readJsonl(7 as never), 'paths'],
    ];
    for (const [make, field] of cases) {
      const error = caught(make);
      expect(error, field).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
  });
});
