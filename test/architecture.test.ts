/**
 * The shape the code keeps (STYLE rules 13–15, docs/architecture.md): every file in a folder of
 * a layer, imports flowing down the layers and never in a cycle, entry points re-exported only
 * by entry points, transports composing a Balancer (never a subclass), no `ON_CLOSE` symbol, and
 * no file of `src/` past 800 lines (a sanity bound; rooms are split by concern, never to meet a
 * count). Read from the sources, type imports included.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const all = files(SRC);
/** Each file's relative imports (resolved to files of `src/`). */
const graph = new Map<string, string[]>(
  all.map((file) => {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:import|export)[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g)].map(
      (m) => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')),
    );
    return [file, targets];
  }),
);
const name = (file: string) => relative(SRC, file);

/**
 * The layers, bottom first (docs/architecture.md draws them). A file imports files of its own
 * folder and of lower layers; folders on one layer do not import each other.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['base'], // errors, events, types, validation, redaction, the clock and random source
  ['hash', 'limits', 'health', 'sources'], // pure algorithms; files and positions
  ['dead-letters'], // kept in files of sources/
  ['load'], // a shard's load and health figures: Shard, feedback, stats, transit
  ['pickers'], // choose among shards by their load
  ['retry'], // when a failed attempt is tried again: options, budget, policy
  ['admission'], // runs, their queue, home lines, the waiting room
  ['routing'], // who may take a run: availability, candidates, requirements, the router
  ['ingest'], // records into batches, batches into runs
  ['core'], // the balancer, its dispatcher and membership, the Transport contract
  ['transport'], // what HTTP and S3 share: bodies, compression, targets
  ['http', 's3'], // the transports
  ['dns', 'otel', 'testing'], // tools over the public API
  ['cli'], // the commands
];
/** The package's entry points: they re-export what sits below them, whatever its layer. */
const ENTRY_POINTS = new Set([
  'index.ts',
  'http/index.ts',
  's3/index.ts',
  'sources/index.ts',
  'dns/index.ts',
  'otel/index.ts',
  'testing/index.ts',
]);
const folderOf = (file: string) => (file.includes('/') ? file.split('/')[0]! : file);
const layerOf = (file: string): number | undefined => {
  const index = LAYERS.findIndex((layer) => layer.includes(folderOf(file)));
  return index === -1 ? undefined : index;
};

describe('the architecture', () => {
  it('has no import cycle', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...path.slice(path.indexOf(file)), file].map(name).join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of all) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('every file of src/ but the entry point sits in a folder of a layer', () => {
    const loose = all.map(name).filter((file) => !file.includes('/') && file !== 'index.ts');
    const unplaced = all
      .map(name)
      .filter((file) => file.includes('/') && layerOf(file) === undefined);
    expect({ loose, unplaced }).toEqual({ loose: [], unplaced: [] });
  });

  it('imports flow down the layers: a folder imports its own files and lower layers only', () => {
    const offenders: string[] = [];
    for (const [file, targets] of graph) {
      const from = name(file);
      if (ENTRY_POINTS.has(from)) continue;
      const own = layerOf(from)!;
      for (const target of targets.map(name)) {
        if (folderOf(target) === folderOf(from)) continue;
        const theirs = layerOf(target);
        if (theirs === undefined || theirs >= own) offenders.push(`${from} imports ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('only a package entry point re-exports another entry point', () => {
    const offenders: string[] = [];
    for (const [file, targets] of graph) {
      const from = name(file);
      if (ENTRY_POINTS.has(from) || from.startsWith('cli/')) continue;
      for (const target of targets.map(name)) {
        if (ENTRY_POINTS.has(target) && folderOf(target) !== folderOf(from)) {
          offenders.push(`${from} imports ${target}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it('transports compose a Balancer: no class of src/ extends Balancer', () => {
    // `interface HttpBalancer extends Balancer<…>` names a type; a class would override it.
    const subclass = /\bclass\s+\w+(?:<[^{]*?>)?\s+extends\s+Balancer\b(?!\w)/;
    const offenders = all.filter((file) => subclass.test(readFileSync(file, 'utf8'))).map(name);
    expect(offenders).toEqual([]);
  });

  it('a balancer is listened to through its public onClose(): no ON_CLOSE symbol left in src/', () => {
    const offenders = all
      .filter((file) => readFileSync(file, 'utf8').includes('ON_CLOSE'))
      .map(name);
    expect(offenders).toEqual([]);
  });

  it('test/ mirrors src/: each test in the folder of the room it tests, or of a suite across rooms', () => {
    const TEST = resolve(SRC, '../test');
    const rooms = new Set(LAYERS.flat());
    // Suites that attack or check the package as a whole, across rooms (and the fixtures' own).
    const suites = new Set([
      'hostile',
      'input',
      'secrets',
      'examples',
      'package',
      'types',
      'fixtures',
    ]);
    const whole = new Set(['architecture.test.ts', 'reference.test.ts']);
    const misplaced = files(TEST)
      .map((file) => relative(TEST, file))
      .filter((file) => /\.test(-d)?\.ts$/.test(file))
      .filter((file) =>
        file.includes('/')
          ? !rooms.has(folderOf(file)) && !suites.has(folderOf(file))
          : !whole.has(file),
      );
    expect(misplaced).toEqual([]);
  });

  it('keeps every file of src/ to 800 lines or fewer (a sanity bound: rooms keep ownership, not a count)', () => {
    const big = all
      .map((file) => [name(file), readFileSync(file, 'utf8').split('\n').length] as const)
      .filter(([, lines]) => lines > 800);
    expect(big).toEqual([]);
  });
});
