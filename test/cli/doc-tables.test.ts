import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

const DOC = readFileSync(new URL('../../docs/choosing-a-picker.md', import.meta.url), 'utf8');
const ROOT = new URL('../../', import.meta.url).pathname;

/** The ```text table that follows the ```sh block running `args`. */
function documentedTable(marker: string): string {
  const at = DOC.indexOf(marker);
  const start = DOC.indexOf('```text\n', at) + '```text\n'.length;
  return DOC.slice(start, DOC.indexOf('```', start)).trim();
}

async function run(argv: string[]): Promise<string> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const cwd = process.cwd();
  process.chdir(ROOT);
  try {
    const code = await main(argv, out, out);
    expect(code).toBe(0);
  } finally {
    process.chdir(cwd);
  }
  const lines = text.trim().split('\n');
  const head = lines.findIndex((l) => l.startsWith('picker'));
  return lines
    .slice(head)
    .filter((l) => l.trim() !== '' && !l.includes('wrote'))
    .join('\n')
    .trim();
}

describe('choosing-a-picker.md: "the same flags give the same numbers"', () => {
  it('one slow shard table', async () => {
    const got = await run(['simulate']);
    expect(got).toBe(documentedTable('### One shard ten times slower'));
  });
  it('heavy-tail table', async () => {
    const got = await run(['simulate', '--scenario', 'docs/images/heavy-tail.json']);
    expect(got).toBe(documentedTable('### Heavy-tailed latency, identical shards'));
  });
  it('slow-spell table', async () => {
    const got = await run(['simulate', '--scenario', 'docs/images/slow-spell.json']);
    expect(got).toBe(documentedTable('### A shard slow for four seconds'));
  });
});
