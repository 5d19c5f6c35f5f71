/**
 * docs/reference.md documents every option the code accepts, every public method of the
 * Balancer and every event it emits. Each entry point is asked for its own list of options (an
 * unknown option's ConfigError names the known ones), so an option added to the code and not to
 * the reference fails here — the reference cannot fall behind silently. The README, the short
 * tour, stays short and points to every guide.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../src/http/index.js';
import { Balancer, ConfigError } from '../src/index.js';
import { createS3Balancer } from '../src/s3/index.js';

const REFERENCE = readDoc('reference.md');
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The known options an entry point lists when given `bogus` (thrown, or as a rejection). */
async function knownOptions(call: () => unknown): Promise<string[]> {
  let error: unknown;
  try {
    await call();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigError);
  const known = /\(known: ([^)]*)\)/.exec((error as Error).message);
  expect(known, (error as Error).message).not.toBeNull();
  return known![1]!.split(', ');
}

/** Names that appear, as a whole word, in no code span of `text`'s prose (examples don't count). */
function undocumented(names: readonly string[], text = REFERENCE): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  const code = (prose.match(/``[\s\S]+?``|`[^`]+`/g) ?? []).join(' ');
  return names.filter((name) => !new RegExp(`\\b${name}\\b`).test(code));
}

/** The part of the reference from the heading `from` to the next heading of its level. */
function section(from: string): string {
  const start = REFERENCE.indexOf(`\n${from}\n`);
  expect(start, from).toBeGreaterThanOrEqual(0);
  const level = /^#+ /.exec(from)![0];
  const next = REFERENCE.indexOf(`\n${level}`, start + from.length + 1);
  return REFERENCE.slice(start, next === -1 ? undefined : next);
}

const send = async () => {};
const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
const s3 = createS3Balancer({
  targets: [{ client: new S3Client({ region: 'us-east-1' }), bucket: 'bucket-a' }],
});
afterAll(async () => {
  await http.close();
  await s3.close();
});

describe('docs/reference.md documents every option', () => {
  it('of the Balancer, each under its own heading', async () => {
    const names = await knownOptions(
      () => new Balancer({ shards: [{ id: 'a', target: 1 }], bogus: 1 } as never),
    );
    expect(names.length).toBeGreaterThan(10);
    const missing = names.filter((name) => !REFERENCE.includes(`#### \`${name}\``));
    expect(missing).toEqual([]);
  });

  it('of run(), createWriteStream(), ingest() and batch', async () => {
    const b = new Balancer({ shards: [{ id: 'a', target: 1 }] });
    const run = await knownOptions(() => b.run(send, { bogus: 1 } as never));
    const stream = await knownOptions(() => b.createWriteStream({ send, bogus: 1 } as never));
    const ingest = await knownOptions(() => b.ingest([], { send, bogus: 1 } as never));
    const batch = await knownOptions(() =>
      b.createWriteStream({ send, batch: { bogus: 1 } } as never),
    );
    for (const names of [run, stream, ingest, batch]) expect(names.length).toBeGreaterThan(2);
    expect(undocumented([...run, ...stream, ...ingest, ...batch])).toEqual([]);
    await b.close();
  });

  it('of shardwise/http: the balancer, request(), and ingest() that builds its requests', async () => {
    const httpSection = section('## HTTP shards: `shardwise/http`');
    const options = await knownOptions(() =>
      createHttpBalancer({ origins: ['http://127.0.0.1:9'], bogus: 1 } as never),
    );
    const ingest = await knownOptions(() => http.ingest([], { path: '/x', bogus: 1 } as never));
    expect(ingest).toContain('failures');
    const ownHttp = options.filter((name) => !REFERENCE.includes(`#### \`${name}\``));
    expect(undocumented(ownHttp, `${httpSection}${readDoc('http.md')}`)).toEqual([]);
    expect(undocumented(ingest, httpSection)).toEqual([]);
  });

  it('of shardwise/s3: the balancer and ingest() that writes objects', async () => {
    const s3Section = section('## S3 buckets and endpoints: `shardwise/s3`');
    const ingest = await knownOptions(() =>
      s3.ingest([], { objectKey: () => 'k', bogus: 1 } as never),
    );
    expect(ingest).toContain('objectKey');
    expect(undocumented(ingest, s3Section)).toEqual([]);
    const options = await knownOptions(() =>
      createS3Balancer({
        targets: [{ client: new S3Client({}), bucket: 'bucket-a' }],
        bogus: 1,
      } as never),
    );
    const ownS3 = options.filter((name) => !REFERENCE.includes(`#### \`${name}\``));
    expect(undocumented(ownS3, `${s3Section}${readDoc('s3.md')}`)).toEqual([]);
  });
});

describe('docs/reference.md documents every method and event of the Balancer', () => {
  it('each public method and property under a heading of its own', () => {
    // `refuse` is protected: for transports, not callers. The emitter's own methods (`on`,
    // `off`, …) are eventemitter3's.
    const names = Object.getOwnPropertyNames(Balancer.prototype).filter(
      (name) => name !== 'constructor' && name !== 'refuse',
    );
    expect(names.length).toBeGreaterThan(12);
    const methods = section('### Methods');
    const missing = names.filter(
      (name) => !methods.includes(`#### \`${name}(`) && !methods.includes(`#### \`${name}\``),
    );
    expect(missing).toEqual([]);
  });

  it('each event of BalancerEvents under a heading of its own', () => {
    const source = readFileSync(new URL('../src/base/events.ts', import.meta.url), 'utf8');
    const body = /export interface BalancerEvents \{([^}]*)\}/.exec(source)![1]!;
    const events = [...body.matchAll(/^\s+(\w+): \[/gm)].map((m) => m[1]!);
    expect(events.length).toBeGreaterThan(12);
    const documented = section('### Events');
    expect(events.filter((name) => !documented.includes(`#### \`${name}\``))).toEqual([]);
  });
});

describe('the README, a front door', () => {
  it('reads in minutes: under 12 KB', () => {
    expect(Buffer.byteLength(README)).toBeLessThan(12 * 1024);
  });

  it('holds the install and test commands CI runs (.ci/run runs the README’s)', () => {
    const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
    for (const command of ['npm ci', 'npm test']) {
      expect(ci).toMatch(new RegExp(`^${command}$`, 'm'));
      expect(README).toMatch(new RegExp(`^${command}\\b`, 'm'));
    }
    expect(README).toMatch(/^npm run demo\b/m);
  });

  it('links the reference, every guide, the changelog and the license', () => {
    const guides = readdirSync(new URL('../docs/', import.meta.url)).filter((f) =>
      f.endsWith('.md'),
    );
    expect(guides).toContain('reference.md');
    const missing = [...guides.map((g) => `docs/${g}`), 'CHANGELOG.md', 'LICENSE'].filter(
      (target) => !README.includes(`](${target})`) && !README.includes(`](${target}#`),
    );
    expect(missing).toEqual([]);
  });

  it('names every entry point of package.json and the command', () => {
    const manifest = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { exports: Record<string, unknown>; bin: Record<string, string> };
    const entries = Object.keys(manifest.exports)
      .filter((key) => key !== './package.json')
      .map((key) => key.replace(/^\./, 'shardwise'));
    expect(entries).toHaveLength(7);
    for (const entry of entries) expect(README).toContain(`\`${entry}\``);
    for (const bin of Object.keys(manifest.bin)) expect(README).toContain(`\`${bin}\` command`);
  });
});

function readDoc(name: string): string {
  return readFileSync(new URL(`../docs/${name}`, import.meta.url), 'utf8');
}
