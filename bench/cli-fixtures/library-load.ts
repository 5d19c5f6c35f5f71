/**
 * The peers of `shardwise ingest` in bench/cli-ingest.bench.ts, each run as a child process like
 * the command: the library called from a short script on the same file (as a user would write
 * it), and reading the file alone (strings, or parsed). Prints one JSON line: `{ records, ms,
 * cpuUs }`, timed as the command times itself — from just before the records are read to the
 * end — and the CPU spent meanwhile (user + system, µs).
 *
 *   node --import tsx bench/cli-fixtures/library-load.ts MODE FILE [ORIGINS]
 *
 * MODE: `library` (http.ingest of readJsonl strings, the defaults), `library-key` (the same,
 * routed by `tenant` read with JSON.parse, consistent hashing), `read` (readJsonl strings),
 * `parse` (readJsonl with parse: true).
 */

import { systemClock } from '../../src/base/runtime.js';
import { consistentHash, createHttpBalancer } from '../../src/http/index.js';
import { readJsonl } from '../../src/sources/index.js';

const [mode, file, origins] = process.argv.slice(2) as [string, string, string | undefined];

async function load(keyed: boolean): Promise<number> {
  const http = createHttpBalancer({
    origins: origins!.split(','),
    ...(keyed ? { picker: consistentHash() } : {}),
  });
  const summary = await http.ingest(readJsonl(file), {
    path: '/',
    ...(keyed
      ? { key: (line: string) => String((JSON.parse(line) as { tenant: string }).tenant) }
      : {}),
  });
  await http.close();
  if (summary.failed + summary.uncertain > 0) throw new Error('records were not written');
  return summary.written;
}

async function read(parse: boolean): Promise<number> {
  let n = 0;
  if (parse)
    for await (const record of readJsonl<{ id: number }>(file, { parse: true }))
      n += record.id >= 0 ? 1 : 0;
  else for await (const line of readJsonl(file)) n += line.length > 0 ? 1 : 0;
  return n;
}

const started = systemClock.now();
const before = process.cpuUsage();
const records =
  mode === 'library'
    ? await load(false)
    : mode === 'library-key'
      ? await load(true)
      : await read(mode === 'parse');
const ms = systemClock.now() - started;
const { user, system } = process.cpuUsage(before);
process.stdout.write(`${JSON.stringify({ records, ms, cpuUs: user + system })}\n`);
