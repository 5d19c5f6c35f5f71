/**
 * examples/jsonl-to-http.ts against real local shards: every line of a 2,000-line file arrives
 * exactly once; a line a shard refuses (4xx) is reported, not retried; a TTY gets a bar.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatSummary,
  main,
  readJsonl,
  startLocalShards,
  writeSample,
} from '../../examples/jsonl-to-http.js';

function sink(isTTY = false) {
  const out = new PassThrough() as PassThrough & { isTTY?: boolean; text: () => string };
  let text = '';
  out.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  out.isTTY = isTTY;
  out.text = () => text;
  return out;
}

describe('examples/jsonl-to-http', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'shardwise-test-jsonl-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('delivers every line of a 2,000-line file exactly once', async () => {
    const file = join(dir, 'records.jsonl');
    await writeSample(file, 2_000);
    const shards = await startLocalShards(3);
    const out = sink();
    try {
      const summary = await main({ file, origins: shards.origins, out, progressMs: 10 });
      expect(summary.written).toBe(2_000);
      expect(summary.failed).toBe(0);
      const received = shards.received
        .flat()
        .map((line) => (JSON.parse(line) as { id: string }).id);
      expect(received).toHaveLength(2_000);
      expect(new Set(received).size).toBe(2_000);
      expect(received).toContain('rec-0');
      expect(received).toContain('rec-1999');
      for (const lines of shards.received) expect(lines.length).toBeGreaterThan(0);
      expect(Object.values(summary.perShard).reduce((a, b) => a + b, 0)).toBe(2_000);
      const text = out.text();
      expect(text).toContain('written: 2000');
      expect(text).toMatch(/^progress: written=\d+/m); // plain lines off a TTY
      expect(text).not.toContain('\r');
    } finally {
      await shards.close();
    }
  });

  it('reports lines a shard refuses with 4xx, without retrying them', async () => {
    const file = join(dir, 'mixed.jsonl');
    await writeFile(file, ['{"id":"a"}', 'not json', '', '{"id":"b"}'].join('\n'));
    const { createServer } = await import('node:http');
    let requests = 0;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        requests++;
        try {
          JSON.parse(body);
          res.statusCode = 204;
        } catch {
          res.statusCode = 400;
        }
        res.end(res.statusCode === 400 ? 'bad json' : undefined);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const out = sink();
    try {
      const summary = await main({ file, origins: [`http://127.0.0.1:${port}`], out });
      expect(summary.written).toBe(2);
      expect(summary.failed).toBe(1);
      expect(summary.errors[0]!.record).toMatchObject({ line: 2, text: 'not json' });
      expect((summary.errors[0]!.error as { statusCode: number }).statusCode).toBe(400);
      expect(requests).toBe(3); // the blank line is skipped; the bad one is sent once
      expect(out.text()).toContain('line 2: ');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('draws a progress bar on a TTY', async () => {
    const file = join(dir, 'small.jsonl');
    await writeSample(file, 300);
    const shards = await startLocalShards(2);
    const out = sink(true);
    try {
      await main({ file, origins: shards.origins, out, progressMs: 1 });
      expect(out.text()).toMatch(/\r\[#+\.*\] +\d+%/);
      expect(out.text()).toContain('\r[##############################] 100%');
    } finally {
      await shards.close();
    }
  });

  it('reads line by line, with line numbers and ids', async () => {
    const file = join(dir, 'ids.jsonl');
    await writeFile(file, '{"id":7}\n\n{"x":1}\n');
    const lines = [];
    for await (const record of readJsonl(file)) lines.push(record);
    expect(lines).toEqual([
      { line: 1, text: '{"id":7}', id: '7' },
      { line: 3, text: '{"x":1}', id: undefined },
    ]);
    expect(
      formatSummary({
        written: 1,
        failed: 0,
        errors: [],
        bytes: 8,
        retries: 0,
        durationMs: 1500,
        perShard: { s: 1 },
      }),
    ).toContain('seconds: 1.50');
  });
});
