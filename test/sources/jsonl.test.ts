/**
 * `readJsonl`: every non-blank line, in order, over one or many files (gzipped too), with the
 * position just after each record; resuming from any position gives exactly the records after it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Balancer } from '../../src/index.js';
import {
  positionReader,
  readJsonl,
  SOURCE_POSITION,
  type SourcePosition,
} from '../../src/sources/index.js';
import { fileWith, openFds, readAll, tempDir } from './files.js';

const dir = tempDir('jsonl');
const DONE = { done: true, value: undefined };

/** A physical line: its text (no line break) and how it ends. */
interface Line {
  text: string;
  end: '\n' | '\r\n' | '';
}

/** The file's content, and the records and positions a reader must give (computed apart). */
function model(lines: readonly Line[], file: string, fileIndex: number) {
  let offset = 0;
  const records: { value: string; at: SourcePosition }[] = [];
  lines.forEach((line, i) => {
    offset += Buffer.byteLength(line.text + line.end);
    if (line.text.trim() !== '') {
      records.push({ value: line.text, at: { file, fileIndex, offset, line: i + 1 } });
    }
  });
  return { content: lines.map((l) => l.text + l.end).join(''), records };
}

const text = fc
  .array(fc.constantFrom('a', 'é', '{', '"', '😀', ' ', '\t', '1', '}', ':'), { maxLength: 12 })
  .map((parts) => parts.join(''));
/** Lines that each end with a break, except maybe the last. */
const lines = fc
  .tuple(
    fc.array(fc.record({ text, end: fc.constantFrom<'\n' | '\r\n'>('\n', '\r\n') }), {
      maxLength: 20,
    }),
    fc.option(text, { nil: undefined }),
  )
  .map(([body, last]): Line[] => (last === undefined ? body : [...body, { text: last, end: '' }]));

describe('readJsonl', () => {
  it('gives every non-blank line and the position after it, whatever the chunk size (plain and .gz)', async () => {
    await fc.assert(
      fc.asyncProperty(
        lines,
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        async (physical, chunkBytes, gz) => {
          const file = fileWith(dir, gz ? 'p.jsonl.gz' : 'p.jsonl', model(physical, '', 0).content);
          const { records } = model(physical, file, 0);
          expect(await readAll(readJsonl(file, { chunkBytes }))).toEqual(records);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('resumed from any record’s position, gives exactly the records after it (plain and .gz)', async () => {
    await fc.assert(
      fc.asyncProperty(
        lines,
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        fc.nat(),
        async (physical, chunkBytes, gz, pick) => {
          const name = gz ? 'r.jsonl.gz' : 'r.jsonl';
          const file = fileWith(dir, name, model(physical, '', 0).content);
          const { records } = model(physical, file, 0);
          // From the start (no record yet) or after any record.
          const k = pick % (records.length + 1);
          const from = k === 0 ? { fileIndex: 0, offset: 0, line: 0 } : records[k - 1]!.at;
          expect(await readAll(readJsonl(file, { chunkBytes, from }))).toEqual(records.slice(k));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('reads several files in order, positions naming each; a resume skips the earlier files unopened', async () => {
    const a = fileWith(dir, 'a.jsonl', '{"n":1}\n{"n":2}\n');
    const b = fileWith(dir, 'b.jsonl.gz', '{"n":3}\n\n{"n":4}');
    const c = fileWith(dir, 'c.jsonl', '{"n":5}\n');
    const all = await readAll(readJsonl([a, b, c], { parse: true }));
    expect(all).toEqual([
      { value: { n: 1 }, at: { file: a, fileIndex: 0, offset: 8, line: 1 } },
      { value: { n: 2 }, at: { file: a, fileIndex: 0, offset: 16, line: 2 } },
      { value: { n: 3 }, at: { file: b, fileIndex: 1, offset: 8, line: 1 } },
      { value: { n: 4 }, at: { file: b, fileIndex: 1, offset: 16, line: 3 } },
      { value: { n: 5 }, at: { file: c, fileIndex: 2, offset: 8, line: 1 } },
    ]);
    // After the last record of the first file: the next file starts.
    expect(
      (await readAll(readJsonl([a, b, c], { parse: true, from: all[1]!.at }))).map((r) => r.value),
    ).toEqual([{ n: 3 }, { n: 4 }, { n: 5 }]);
    // A first file that no longer exists is never opened when the position is past it.
    const gone = `${dir}/gone.jsonl`;
    const from = { fileIndex: 1, offset: 8, line: 1 };
    expect(
      (await readAll(readJsonl([gone, b, c], { parse: true, from }))).map((r) => r.value),
    ).toEqual([{ n: 4 }, { n: 5 }]);
  });

  it('yields strings untouched by default, and parsed JSON with parse: true', async () => {
    const file = fileWith(dir, 's.jsonl', '{"id": 1,  "x":"é"}\r\n\ufeff[1]\n');
    expect((await readAll(readJsonl(file))).map((r) => r.value)).toEqual([
      '{"id": 1,  "x":"é"}',
      '\ufeff[1]', // a byte order mark is skipped only at the start of a file
    ]);
    const bom = fileWith(dir, 'bom.jsonl', '\ufeff{"id":1}\n');
    expect(await readAll(readJsonl(bom, { parse: true }))).toEqual([
      { value: { id: 1 }, at: { file: bom, fileIndex: 0, offset: 12, line: 1 } },
    ]);
  });

  it('reports where it starts before the first record: the start, or its from', async () => {
    const a = fileWith(dir, 'a.jsonl', '{"n":1}\n{"n":2}\n');
    const source = readJsonl(a);
    expect(source[SOURCE_POSITION]()).toEqual({ file: a, fileIndex: 0, offset: 0, line: 0 });
    const resumed = readJsonl(a, { from: { fileIndex: 0, offset: 8, line: 1 } });
    const iterator = resumed[Symbol.asyncIterator]();
    expect(iterator[SOURCE_POSITION]()).toEqual({ file: a, fileIndex: 0, offset: 8, line: 1 });
    await iterator.next();
    expect(resumed[SOURCE_POSITION]()).toEqual({ file: a, fileIndex: 0, offset: 16, line: 2 });
    // After the end, the position stays after the last record.
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(iterator[SOURCE_POSITION]()).toEqual({ file: a, fileIndex: 0, offset: 16, line: 2 });
  });

  it('positionReader finds the method on the iterator or the iterable, and none on an array', () => {
    const source = readJsonl(fileWith(dir, 'a.jsonl', '1\n'));
    const iterator = source[Symbol.asyncIterator]();
    expect(positionReader(source, iterator)?.()).toEqual(iterator[SOURCE_POSITION]());
    const onIterable = {
      [SOURCE_POSITION]: () => ({ file: 'f', fileIndex: 0, offset: 3, line: 1 }),
    };
    expect(positionReader(onIterable, {})?.().offset).toBe(3);
    const array = [1, 2];
    expect(positionReader(array, array[Symbol.iterator]())).toBeUndefined();
  });

  for (const name of ['long.jsonl', 'long.jsonl.gz']) {
    it(`closes its file when the reader stops early: break out of for await (${name})`, async () => {
      const file = fileWith(dir, name, '{"n":1}\n'.repeat(1000));
      const before = openFds();
      let seen = 0;
      for await (const _ of readJsonl(file, { chunkBytes: 64 })) if (++seen === 3) break;
      expect(seen).toBe(3);
      expect(openFds()).toBe(before); // released by the time return() resolved
    });
  }

  for (const name of ['big.jsonl', 'big.jsonl.gz']) {
    it(`return() while a read is pending settles that next() without an error and closes the file (${name})`, async () => {
      const file = fileWith(dir, name, '{"n":1}\n'.repeat(5000));
      const before = openFds();
      const iterator = readJsonl(file, { chunkBytes: 128 })[Symbol.asyncIterator]();
      await iterator.next(); // the file is open
      for (let i = 0; i < 15; i++) await iterator.next(); // past the first chunk
      const pending = iterator.next(); // may need a read
      const stopped = iterator.return!();
      const last = await pending;
      expect(last.done === true || last.value === '{"n":1}').toBe(true);
      expect(await stopped).toEqual(DONE);
      expect(await iterator.next()).toEqual(DONE);
      expect(openFds()).toBe(before); // released by the time return() resolved
    });
  }

  it('answers done to every next() after the end, and to next() calls made at once', async () => {
    // The last line without a newline: the end is then found without reading again.
    const file = fileWith(dir, 'a.jsonl', '{"n":1}\n{"n":2}');
    const iterator = readJsonl(file)[Symbol.asyncIterator]();
    // Asked together, they are answered in order.
    const all = await Promise.all([iterator.next(), iterator.next(), iterator.next()]);
    expect(all.map((r) => r.value)).toEqual(['{"n":1}', '{"n":2}', undefined]);
    for (let i = 0; i < 3; i++) expect(await iterator.next()).toEqual(DONE);
  });

  it('feeds ingest like any async source: every line sent once, in order', async () => {
    const file = fileWith(
      dir,
      'ingest.jsonl.gz',
      `${[1, 2, 3, 4, 5].map((n) => `{"n":${n}}`).join('\n')}\n`,
    );
    const balancer = new Balancer({ shards: [{ id: 'a', target: 'a' }], maxInFlightPerShard: 1 });
    const sent: string[] = [];
    const summary = await balancer.ingest(readJsonl(file), {
      send: async (_shard, line: string) => {
        sent.push(line);
      },
    });
    expect(summary.written).toBe(5);
    expect(sent).toEqual(['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}', '{"n":5}']);
    await balancer.close();
  });
});
