/**
 * The package as users receive it. From a copy of the repository without `dist/` (what a fresh
 * clone holds), `npm pack` must build and pack a complete package; installed with `npm install
 * <tarball>` into a new project, it must import from ESM, require from CommonJS, run its command,
 * carry its docs and examples with every README link working, and type-check the README's and the
 * guides' examples against the installed types (not the sources).
 *
 * Slow by nature (a build, an install from the npm cache): about a minute, bounded by timeouts.
 */
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  exports: Record<
    string,
    | string
    | { import: { types: string; default: string }; require: { types: string; default: string } }
  >;
  bin: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The environment of child processes: no npm_* variables of a parent `npm test`, no notices. */
function env(): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) clean[k] = v;
  return {
    ...clean,
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    NO_COLOR: '1',
  };
}

async function sh(cwd: string, file: string, args: string[], timeout = 120_000) {
  try {
    return await run(file, args, { cwd, env: env(), timeout, maxBuffer: 64 * 2 ** 20 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${file} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
    );
  }
}

let tmp = '';
let project = '';
let installed = '';

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'shardwise-package-'));
  // A fresh clone: the files git tracks or would track, as they are now, and no dist/. The
  // dependencies a clone's `npm ci` would install are the repository's own (linked).
  const clone = join(tmp, 'clone');
  const { stdout } = await sh(repo, 'git', [
    'ls-files',
    '-z',
    '--cached',
    '--others',
    '--exclude-standard',
  ]);
  for (const file of stdout.split('\0')) {
    if (file === '' || !existsSync(join(repo, file))) continue;
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    cpSync(join(repo, file), join(clone, file));
  }
  expect(existsSync(join(clone, 'dist'))).toBe(false);
  symlinkSync(join(repo, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packs = join(tmp, 'packs');
  mkdirSync(packs);
  await sh(clone, 'npm', ['pack', '--pack-destination', packs], 240_000);
  const tarballs = readdirSync(packs).filter((f) => f.endsWith('.tgz'));
  expect(tarballs).toHaveLength(1);

  project = join(tmp, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'uses-shardwise', private: true, type: 'module' }),
  );
  // The optional peers (S3, OpenTelemetry, and the SDK pieces the guides' examples use) at the
  // versions this repository tests with, so they come from the npm cache.
  const peers = [
    '@aws-sdk/client-s3',
    '@smithy/node-http-handler',
    '@opentelemetry/api',
    '@opentelemetry/sdk-metrics',
    '@opentelemetry/exporter-prometheus',
  ].map((name) => `${name}@${manifest.devDependencies[name]}`);
  await sh(
    project,
    'npm',
    ['install', join(packs, tarballs[0]!), ...peers, '--no-audit', '--no-fund', '--prefer-offline'],
    240_000,
  );
  installed = join(project, 'node_modules', 'shardwise');
}, 420_000);

afterAll(() => {
  if (tmp !== '') rmSync(tmp, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('holds the build of every entry point, the command, the docs and the examples', () => {
    for (const [name, target] of Object.entries(manifest.exports)) {
      if (typeof target === 'string') {
        expect(existsSync(join(installed, target)), name).toBe(true);
        continue;
      }
      for (const file of [
        target.import.types,
        target.import.default,
        target.require.types,
        target.require.default,
      ]) {
        expect(existsSync(join(installed, file)), `${name}: ${file}`).toBe(true);
      }
    }
    const bin = readFileSync(join(installed, manifest.bin.shardwise!), 'utf8');
    expect(bin.startsWith('#!/usr/bin/env node')).toBe(true);
    const guides = readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md'));
    expect(
      readdirSync(join(installed, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .sort(),
    ).toEqual(guides.sort());
    expect(existsSync(join(installed, 'docs', 'images'))).toBe(true);
    for (const file of ['README.md', 'LICENSE', 'CHANGELOG.md']) {
      expect(existsSync(join(installed, file)), file).toBe(true);
    }
    expect(existsSync(join(installed, 'examples', 'custom-picker', 'least-latency.test.ts'))).toBe(
      true,
    );
    // Not shipped: the sources, the tests, the generated API reference.
    for (const absent of ['src', 'test', join('docs', 'api'), 'node_modules']) {
      expect(existsSync(join(installed, absent)), absent).toBe(false);
    }
  });

  it('every relative link of the README and the guides resolves inside the package', () => {
    const pages = [
      'README.md',
      ...readdirSync(join(installed, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f)),
    ];
    let links = 0;
    for (const page of pages) {
      const text = readFileSync(join(installed, page), 'utf8');
      for (const [, href] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(href!) || href!.startsWith('#')) continue;
        const target = normalize(join(dirname(page), href!.split('#')[0]!));
        expect(
          relative(installed, join(installed, target)).startsWith('..'),
          `${page} → ${href}`,
        ).toBe(false);
        expect(existsSync(join(installed, target)), `${page} → ${href}`).toBe(true);
        links++;
      }
    }
    expect(links).toBeGreaterThan(20);
  });

  it('imports from ESM: the transports re-export the core as the same bindings', async () => {
    writeFileSync(
      join(project, 'check.mjs'),
      `import assert from 'node:assert/strict';
import * as core from 'shardwise';
import * as http from 'shardwise/http';
import * as s3 from 'shardwise/s3';
import { seededRandom, simulate } from 'shardwise/testing';
for (const name of Object.keys(core)) {
  assert.equal(http[name], core[name], 'shardwise/http: ' + name);
  assert.equal(s3[name], core[name], 'shardwise/s3: ' + name);
}
const balancer = new http.Balancer({ shards: [{ id: 'a', target: 'A' }], picker: http.p2c(), random: seededRandom(1) });
assert.equal(await balancer.run(async (shard) => shard.target), 'A');
await balancer.close();
const result = await simulate({ picker: core.peakEwma(), shards: [{ id: 'a', latency: 5 }], requests: 100, seed: 1 });
assert.equal(result.perShard[0].requests, 100);
console.log('esm ok', Object.keys(core).length);
`,
    );
    const { stdout } = await sh(project, process.execPath, ['check.mjs']);
    expect(stdout).toMatch(/^esm ok \d+$/m);
  });

  it('requires from CommonJS, errors recognised across the ESM and CJS copies', async () => {
    writeFileSync(
      join(project, 'check.cjs'),
      `const assert = require('node:assert/strict');
const core = require('shardwise');
const http = require('shardwise/http');
const s3 = require('shardwise/s3');
const { seededRandom } = require('shardwise/testing');
for (const name of Object.keys(core)) {
  assert.ok(name in http, 'shardwise/http: ' + name);
  assert.ok(name in s3, 'shardwise/s3: ' + name);
}
(async () => {
  const balancer = new core.Balancer({ shards: [{ id: 'a', target: 'A' }], random: seededRandom(2) });
  assert.equal(await balancer.run(async (shard) => shard.target), 'A');
  await balancer.close();
  const esm = await import('shardwise');
  let thrown;
  try { new esm.Balancer({ shards: 'nope' }); } catch (error) { thrown = error; }
  assert.ok(thrown instanceof core.ConfigError && thrown instanceof http.ConfigError);
  console.log('cjs ok');
})().catch((error) => { console.error(error); process.exit(1); });
`,
    );
    const { stdout } = await sh(project, process.execPath, ['check.cjs']);
    expect(stdout).toContain('cjs ok');
  });

  it('runs its command: npx shardwise --help, npx shardwise simulate', async () => {
    const help = await sh(project, 'npx', ['--no', '--', 'shardwise', '--help']);
    expect(help.stdout).toContain('simulate');
    expect(help.stdout).toContain('consistent-hash:jump');
    const sim = await sh(project, 'npx', [
      '--no',
      'shardwise',
      'simulate',
      '--requests',
      '2000',
      '--picker',
      'round-robin,peak-ewma',
    ]);
    const rows = sim.stdout
      .split('\n')
      .filter((line) => /^(round-robin|peak-ewma)\s+\d/.test(line));
    expect(rows).toHaveLength(2);
  });

  it("type-checks the README's and the guides' examples against the installed types", async () => {
    await sh(project, process.execPath, [
      join(repo, 'scripts', 'extract-snippets.mjs'),
      '--root',
      installed,
      '--out',
      join(project, 'snippets'),
    ]);
    expect(readdirSync(join(project, 'snippets')).length).toBeGreaterThan(10);
    // One type whichever entry point names it, from ESM (.d.ts) and from CommonJS (.d.cts).
    const transport = `import { Balancer, peakEwma } from 'shardwise';
import { Balancer as FromHttp, createHttpBalancer, type HttpTarget } from 'shardwise/http';
import { Balancer as FromS3 } from 'shardwise/s3';
const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'], picker: peakEwma() });
const asCore: Balancer<HttpTarget> = http;
const fromHttp: FromHttp<string> = new Balancer({ shards: [{ id: 'a', target: 'x' }] });
const fromS3: FromS3<string> = fromHttp;
void asCore;
void fromS3;
`;
    writeFileSync(join(project, 'snippets', 'transport-types.ts'), `${transport}export {};\n`);
    writeFileSync(join(project, 'snippets', 'transport-types.cts'), `${transport}export {};\n`);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: true,
          noEmit: true,
          types: ['node'],
          typeRoots: [join(repo, 'node_modules', '@types')],
        },
        include: ['snippets'],
      }),
    );
    await sh(
      project,
      process.execPath,
      [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
      180_000,
    );
  });
});
