/**
 * The README documents every option the code accepts. Each entry point is asked for its own list
 * (an unknown option's ConfigError names the known ones), so an option added to the code and not
 * to the README fails here — the reference cannot fall behind silently. An option whose reference
 * lives in a guide of docs/ (a `#### \`name\`` heading there) counts as documented too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../src/http/index.js';
import { Balancer, ConfigError } from '../src/index.js';
import { createS3Balancer } from '../src/s3/index.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const GUIDES = readdirSync(new URL('../docs/', import.meta.url))
  .filter((name) => name.endsWith('.md'))
  .map((name) => readDoc(name));

/** The option has a reference heading of its own, in the README or a guide. */
function hasHeading(name: string): boolean {
  const heading = `#### \`${name}\``;
  return README.includes(heading) || GUIDES.some((guide) => guide.includes(heading));
}

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
function undocumented(names: readonly string[], text = README): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  const code = (prose.match(/``[\s\S]+?``|`[^`]+`/g) ?? []).join(' ');
  return names.filter((name) => !new RegExp(`\\b${name}\\b`).test(code));
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

describe('the README documents every option', () => {
  it('of the Balancer, each under its own heading', async () => {
    const names = await knownOptions(
      () => new Balancer({ shards: [{ id: 'a', target: 1 }], bogus: 1 } as never),
    );
    expect(names.length).toBeGreaterThan(10);
    const missing = names.filter((name) => !hasHeading(name));
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
    const section = README.slice(README.indexOf('## HTTP shards'), README.indexOf('## S3 buckets'));
    const options = await knownOptions(() =>
      createHttpBalancer({ origins: ['http://127.0.0.1:9'], bogus: 1 } as never),
    );
    const ingest = await knownOptions(() => http.ingest([], { path: '/x', bogus: 1 } as never));
    expect(ingest).toContain('failures');
    const ownHttp = options.filter((name) => !hasHeading(name));
    expect(undocumented(ownHttp, `${section}${readDoc('http.md')}`)).toEqual([]);
    expect(undocumented(ingest, section)).toEqual([]);
  });

  it('of shardwise/s3: the balancer and ingest() that writes objects', async () => {
    const section = README.slice(README.indexOf('## S3 buckets'), README.indexOf('## Fleets'));
    const ingest = await knownOptions(() =>
      s3.ingest([], { objectKey: () => 'k', bogus: 1 } as never),
    );
    expect(ingest).toContain('objectKey');
    expect(undocumented(ingest, section)).toEqual([]);
    const options = await knownOptions(() =>
      createS3Balancer({
        targets: [{ client: new S3Client({}), bucket: 'bucket-a' }],
        bogus: 1,
      } as never),
    );
    const ownS3 = options.filter((name) => !hasHeading(name));
    expect(undocumented(ownS3, `${section}${readDoc('s3.md')}`)).toEqual([]);
  });
});

function readDoc(name: string): string {
  return readFileSync(new URL(`../docs/${name}`, import.meta.url), 'utf8');
}
