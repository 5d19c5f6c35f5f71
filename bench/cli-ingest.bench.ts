/**
 * What `shardwise ingest` costs beside the library it drives, on the same file.
 *
 *   node --expose-gc --import tsx bench/cli-ingest.bench.ts     (or npm run bench cli-ingest)
 *
 * A 1,000,000-line JSONL file (~100-byte lines, in the page cache after the first pass) into 8
 * loopback shards in a process of their own (bench/http-fixtures/servers.mjs: each reads the body
 * and answers at once). Every contender is a child process (node + tsx, as `npm run` would start
 * it), timed by itself from just before the first record is read to the end, so start-up is left
 * out of every figure alike. Interleaved rounds (each in a seeded random order), medians of the
 * rates and of the ratios paired within each round.
 *
 * 1. `shardwise ingest FILE --to …` (its `--json` summary's `durationMs`) beside the library
 *    called from a script — `http.ingest(readJsonl(file), { path: '/' })` — and beside reading
 *    the file alone (strings), and reading and parsing it (`parse: true`). Goal: a rate ≥ 0.9×
 *    the library's.
 * 2. `--key tenant` (the field read from the line by a scan) beside the library keyed by
 *    `JSON.parse(line).tenant` (both consistent hashing).
 * 3. The cost of durability with nothing failing: `--checkpoint FILE` (saved every second) and
 *    `--dead-letter FILE`, each beside the plain command. Goal: ≤ 3 % more CPU per record (on
 *    this shared machine the rate moves by more than that between two runs of the same thing).
 * 4. The key alone, in this process: ns per line of `--key`'s scan (`keyField`) beside
 *    `String(JSON.parse(line).tenant)`, over the file's lines.
 *
 * Beside each rate, the CPU the load's process spent per record (user + system, from the first
 * flag read to the end: bench/cli-fixtures/run-command.ts runs the command as its `bin` does and
 * reads `process.cpuUsage()`). On a machine shared with other work (this one: 2 cores and several
 * engineers) the rates move between rounds; CPU per record, and ratios paired within a round,
 * are steadier.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyField } from '../src/cli/key-field.js';
import { seededRandom } from '../src/testing/index.js';
import { fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const RECORDS = 1_000_000;
const SHARDS = 8;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const ROOT = fileURLToPath(new URL('../', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'shardwise-cli-bench-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

function makeFile(): { file: string; lines: string[] } {
  const parts: string[] = [];
  for (let id = 0; id < RECORDS; id++) {
    parts.push(
      `${JSON.stringify({
        id,
        tenant: `t${(id * 7919) % 97}`,
        ts: 1_700_000_000_000 + id * 13,
        level: id % 11 === 0 ? 'warn' : 'info',
        msg: `event ${(id * 2654435761) % 1_000_003} ok`.padEnd(30, '.'),
      })}\n`,
    );
  }
  const file = join(dir, 'lines.jsonl');
  writeFileSync(file, parts.join(''));
  return { file, lines: parts.map((line) => line.slice(0, -1)) };
}

/** ns per line of `key` over `lines`. */
function keyCost(lines: readonly string[], key: (line: string) => string): number {
  let length = 0;
  const started = nowNs();
  for (const line of lines) length += key(line).length;
  const ns = (nowNs() - started) / lines.length;
  if (length === 0) throw new Error('no key read');
  return ns;
}

function startShards(): Promise<{ child: ChildProcess; origins: string[] }> {
  const child = fork(new URL('./http-fixtures/servers.mjs', import.meta.url), [String(SHARDS)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { ports: number[] }) => {
      resolve({ child, origins: m.ports.map((p) => `http://127.0.0.1:${p}`) });
    });
  });
}

/** Runs a script under node + tsx; resolves with its stdout and stderr. */
function runNode(args: string[]): Promise<{ out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      if (code === 0) resolve({ out, err });
      else reject(new Error(`${args.join(' ')} exited ${code}: ${err.slice(-500)}`));
    });
  });
}

/** One run: records per second, and CPU µs per record (user + system, the load's process). */
interface Run {
  rate: number;
  cpu: number;
}
type Contender = () => Promise<Run>;

function command(file: string, origins: string[], extra: () => string[]): Contender {
  return async () => {
    const { out, err } = await runNode([
      'bench/cli-fixtures/run-command.ts',
      'ingest',
      file,
      '--to',
      origins.join(','),
      '--json',
      ...extra(),
    ]);
    const summary = JSON.parse(out) as { written: number; durationMs: number };
    if (summary.written !== RECORDS) throw new Error(`${summary.written} written`);
    const cpu = JSON.parse(/^cpu (.*)$/m.exec(err)![1]!) as { user: number; system: number };
    return {
      rate: (summary.written * 1000) / summary.durationMs,
      cpu: (cpu.user + cpu.system) / summary.written,
    };
  };
}

function library(mode: string, file: string, origins: string[]): Contender {
  return async () => {
    const { out } = await runNode([
      'bench/cli-fixtures/library-load.ts',
      mode,
      file,
      origins.join(','),
    ]);
    const { records, ms, cpuUs } = JSON.parse(out) as {
      records: number;
      ms: number;
      cpuUs: number;
    };
    if (records !== RECORDS) throw new Error(`${mode}: ${records} records`);
    return { rate: (records * 1000) / ms, cpu: cpuUs / records };
  };
}

let fresh = 0;
/** A new file name in the bench's directory (a checkpoint that exists would resume). */
const newPath = (name: string) => join(dir, `${name}-${fresh++}`);

printHeader(
  `shardwise ingest: ${RECORDS.toLocaleString('en')} lines into ${SHARDS} loopback shards`,
);
const { file, lines } = makeFile();
const shards = await startShards();
const { origins } = shards;
const contenders: Record<string, Contender> = {
  command: command(file, origins, () => []),
  library: library('library', file, origins),
  read: library('read', file, origins),
  parse: library('parse', file, origins),
  'command --key': command(file, origins, () => ['--key', 'tenant']),
  'library keyed': library('library-key', file, origins),
  'command --checkpoint': command(file, origins, () => ['--checkpoint', newPath('load.ckpt')]),
  'command --dead-letter': command(file, origins, () => ['--dead-letter', newPath('dead.ndjson')]),
};
const names = Object.keys(contenders);
const runs: Record<string, Run[]> = Object.fromEntries(names.map((n) => [n, []]));
// One unmeasured pass of each: the file into the page cache, tsx's cache warm.
for (const name of names) await contenders[name]!();
// Each round in an order of its own (seeded): no contender always follows the same one.
const random = seededRandom(32);
for (let round = 0; round < ROUNDS; round++) {
  const order = [...names];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  for (const name of order) runs[name]!.push(await contenders[name]!());
  process.stdout.write(`round ${round + 1}/${ROUNDS} done\n`);
}
shards.child.kill();

const scan = keyField('tenant');
const parse = (line: string) => String((JSON.parse(line) as { tenant: string }).tenant);
const keyNs: Record<string, number[]> = { scan: [], parse: [] };
for (let round = 0; round <= ROUNDS; round++) {
  const first = round % 2 === 0;
  const a = keyCost(lines, first ? scan : parse);
  const b = keyCost(lines, first ? parse : scan);
  if (round === 0) continue; // warm-up
  keyNs.scan!.push(first ? a : b);
  keyNs.parse!.push(first ? b : a);
}
const keyRatio = median(keyNs.parse!.map((p, i) => p / keyNs.scan![i]!));

/** The median of the per-round ratios of a figure, a / b (paired in each round). */
const paired = (a: string, b: string, figure: keyof Run) =>
  median(runs[a]!.map((r, i) => r[figure] / runs[b]![i]![figure]));
const rate = (name: string) => `${fmt(median(runs[name]!.map((r) => r.rate)) / 1000, 0)} k/s`;
const cpu = (name: string) => fmt(median(runs[name]!.map((r) => r.cpu)), 2);

/** A row: `a` beside `b`, records/s and CPU per record, both ratios, and a goal on one of them. */
function row(
  label: string,
  a: string,
  beside: string,
  b: string,
  check?: { figure: keyof Run; ok: (ratio: number) => boolean; text: string },
): string[] {
  const goalText =
    check === undefined ? '' : `${check.text} ${goal(check.ok(paired(a, b, check.figure)))}`;
  return [
    label,
    rate(a),
    cpu(a),
    beside,
    rate(b),
    cpu(b),
    ratio(paired(a, b, 'rate')),
    ratio(paired(a, b, 'cpu')),
    goalText,
  ];
}

console.log('');
printTable(
  [
    'case',
    'records/s',
    'CPU µs/rec',
    'beside',
    'records/s',
    'CPU µs/rec',
    'rate ratio',
    'CPU ratio',
    'goal',
  ],
  [
    row('`shardwise ingest`', 'command', 'the library from a script', 'library', {
      figure: 'rate',
      ok: (r) => r >= 0.9,
      text: 'rate ≥ 0.90×',
    }),
    row('`shardwise ingest`', 'command', 'reading the file (strings)', 'read'),
    row('`shardwise ingest`', 'command', 'reading and parsing it', 'parse'),
    row(
      '`--key tenant` (a scan)',
      'command --key',
      'the library keyed by JSON.parse',
      'library keyed',
    ),
    row('`--checkpoint FILE`', 'command --checkpoint', 'the command without', 'command', {
      figure: 'cpu',
      ok: (r) => r <= 1.03,
      text: 'CPU ≤ 1.03×',
    }),
    row('`--dead-letter FILE`', 'command --dead-letter', 'the command without', 'command', {
      figure: 'cpu',
      ok: (r) => r <= 1.03,
      text: 'CPU ≤ 1.03×',
    }),
  ],
);
console.log('');
printTable(
  ['the key of a line', 'ns per line', 'beside', 'its ns per line', 'faster'],
  [
    [
      '`--key` scan (keyField)',
      fmt(median(keyNs.scan!), 0),
      'JSON.parse(line).tenant',
      fmt(median(keyNs.parse!), 0),
      ratio(keyRatio, 1),
    ],
  ],
);
