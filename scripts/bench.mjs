#!/usr/bin/env node
/**
 * Runs every bench/*.bench.ts in sorted order, each in its own node process (tsx's ESM loader,
 * `--expose-gc` so benchmarks can settle the heap), streaming output. Exits non-zero if any fails.
 *
 * Usage: node scripts/bench.mjs [filter]   (filter: a substring of the file name)
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const benchDir = join(root, 'bench');
const filter = process.argv[2];

const files = readdirSync(benchDir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => filter === undefined || name.includes(filter))
  .sort();

if (files.length === 0) {
  console.error(
    `no benchmark matches ${filter === undefined ? 'bench/*.bench.ts' : `"${filter}"`}`,
  );
  process.exit(1);
}

/** Runs one file; resolves with its exit code (a signal counts as a failure). */
function runOne(file) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', join('bench', file)], {
      cwd: root,
      stdio: 'inherit',
    });
    child.on('error', (error) => {
      console.error(`bench: could not start ${file}: ${error.message}`);
      resolve(1);
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

const failed = [];
for (const file of files) {
  console.log(`\n# bench/${file}`);
  const started = Date.now();
  const code = await runOne(file);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (code === 0) console.log(`# bench/${file}: done in ${seconds} s`);
  else {
    console.error(`# bench/${file}: FAILED (exit ${code}) after ${seconds} s`);
    failed.push(file);
  }
}

if (failed.length > 0) {
  console.error(`\n${failed.length} of ${files.length} benchmark(s) failed: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`\nall ${files.length} benchmark(s) passed`);
