/**
 * What the tarball lists, as npm itself packs it (`npm pack --dry-run`, without the build: the
 * list of files is the question here, not the build — `package.test.ts` packs and installs one).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { license: string };

async function packed(): Promise<string[]> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  const { stdout } = await promisify(execFile)(
    'npm',
    ['pack', '--dry-run', '--json', '--ignore-scripts'],
    { cwd: ROOT, env: { ...env, npm_config_update_notifier: 'false' }, timeout: 60_000 },
  );
  const [pack] = JSON.parse(stdout) as [{ files: { path: string }[] }];
  return pack.files.map((f) => f.path);
}

describe('the tarball', () => {
  it('holds the LICENSE and the CHANGELOG beside the README', async () => {
    const files = await packed();
    expect(files).toContain('LICENSE');
    expect(files).toContain('CHANGELOG.md');
    expect(files).toContain('README.md');
  });

  it('LICENSE is the license package.json names, for shardwise contributors', () => {
    const license = readFileSync(`${ROOT}LICENSE`, 'utf8');
    expect(manifest.license).toBe('MIT');
    expect(license.split('\n')[0]).toBe('MIT License');
    expect(license).toContain('Copyright (c) 2026 shardwise contributors');
  });

  it('CHANGELOG names the version package.json carries', () => {
    const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
      version: string;
    };
    expect(readFileSync(`${ROOT}CHANGELOG.md`, 'utf8')).toMatch(
      new RegExp(`^## \\[?${version.replaceAll('.', '\\.')}\\]? - `, 'm'),
    );
  });
});
