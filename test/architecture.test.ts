/**
 * The shape the code keeps (STYLE rules 13–15, docs/architecture.md): imports flow one way, no
 * module below the balancer imports it, the core imports no transport, no transport subclasses
 * the Balancer (it composes one), no `ON_CLOSE` symbol (a public `onClose()`), and no file of `src/`
 * grows past 800 lines (a sanity bound; rooms are split by concern, never to meet a count). Read from the sources, type imports included.
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

  it('no module below the balancer imports it; the core imports no transport', () => {
    const above = /^(index\.ts|http\/|s3\/|dns\/|otel\/|testing\/|cli\/)/;
    const transport = /^(http|s3|dns|otel|testing|cli)\//;
    const offenders: string[] = [];
    for (const [file, targets] of graph) {
      const from = name(file);
      for (const target of targets.map(name)) {
        if (target === 'balancer.ts' && !above.test(from))
          offenders.push(`${from} imports balancer.ts`);
        if (!transport.test(from) && from !== 'index.ts' && transport.test(target))
          offenders.push(`${from} (core) imports ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('sources/ and dead-letters/ sit on the bottom layer: ingest may use them, they use no room', () => {
    const room = /^(sources|dead-letters)\//;
    const bottom =
      /^(sources\/|dead-letters\/|errors\.ts$|redact\.ts$|validate\.ts$|runtime\.ts$|types\.ts$)/;
    const offenders: string[] = [];
    for (const [file, targets] of graph) {
      const from = name(file);
      if (!room.test(from)) continue;
      for (const target of targets.map(name)) {
        if (!bottom.test(target)) offenders.push(`${from} imports ${target}`);
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

  it('keeps every file of src/ to 800 lines or fewer (a sanity bound: rooms keep ownership, not a count)', () => {
    const big = all
      .map((file) => [name(file), readFileSync(file, 'utf8').split('\n').length] as const)
      .filter(([, lines]) => lines > 800);
    expect(big).toEqual([]);
  });
});
