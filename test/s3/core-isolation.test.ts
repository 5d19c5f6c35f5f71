import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SPECIFIER =
  /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;

/** Every import specifier of a TypeScript source (static, re-export, side-effect, dynamic). */
function specifiers(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(SPECIFIER)) out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

/** The `.ts` file a relative `.js` specifier names (NodeNext style), or a folder's index. */
function resolveTs(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`cannot resolve ${specifier} from ${relative(root, from)}`);
}

/**
 * Importing `shardwise` must never load @aws-sdk: src/index.ts and every file it imports,
 * transitively, import neither the SDK (nor smithy) nor anything under src/s3.
 */
describe('the core does not load the S3 transport', () => {
  it('src/index.ts imports nothing from @aws-sdk, @smithy or src/s3, transitively', () => {
    const entry = join(root, 'src/index.ts');
    const seen = new Set<string>();
    const stack = [entry];
    const offending: string[] = [];
    while (stack.length > 0) {
      const file = stack.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        if (spec.startsWith('.')) {
          const target = resolveTs(file, spec);
          if (relative(join(root, 'src/s3'), target).startsWith('..') === false) {
            offending.push(`${relative(root, file)} → ${spec}`);
          }
          stack.push(target);
        } else if (/^@aws-sdk\/|^@smithy\//.test(spec)) {
          offending.push(`${relative(root, file)} → ${spec}`);
        }
      }
    }
    expect(seen.size).toBeGreaterThan(10);
    expect(offending).toEqual([]);
  });

  it('the scan finds what it looks for (src/s3/index.ts does import the SDK)', () => {
    const sources = ['src/s3/balancer.ts', 'src/s3/client.ts'].map((f) =>
      readFileSync(join(root, f), 'utf8'),
    );
    expect(sources.flatMap(specifiers)).toContain('@aws-sdk/client-s3');
  });
});
