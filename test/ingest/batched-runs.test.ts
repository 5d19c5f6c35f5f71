/**
 * Batching end to end where users first meet it: `examples/jsonl-to-http.ts` with `batch` (every
 * line of a file arrives exactly once, in far fewer requests), and the demo's batched pass
 * (records/s beside the one-record-per-run figure, nothing lost).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  main as jsonlToHttp,
  startLocalShards,
  writeSample,
} from '../../examples/jsonl-to-http.js';
import { main as cli } from '../../src/cli/main.js';
import { unwrap } from '../cli/run-cli.js';

describe('batched runs', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'shardwise-test-batch-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('examples/jsonl-to-http in batches: every line once, in batches of up to 100 lines', async () => {
    const file = join(dir, 'records.jsonl');
    await writeSample(file, 5_000);
    const shards = await startLocalShards(3);
    try {
      const out = new PassThrough();
      out.resume();
      const summary = await jsonlToHttp({ file, origins: shards.origins, out, batch: 100 });
      expect(summary).toMatchObject({ written: 5_000, failed: 0 });
      const ids = shards.received.flat().map((line) => (JSON.parse(line) as { id: string }).id);
      expect(ids).toHaveLength(5_000);
      expect(new Set(ids).size).toBe(5_000);
      expect(summary.batches).toBeGreaterThanOrEqual(50);
      expect(summary.batches).toBeLessThan(200);
    } finally {
      await shards.close();
    }
  });

  it('the demo’s batched pass reports its rate beside one record per run, and nothing lost', async () => {
    let text = '';
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        text += String(chunk);
        callback();
      },
    });
    const code = await cli(
      [
        'demo',
        '--records',
        '2000',
        '--picker',
        'p2c',
        '--batch-records',
        '30000',
        '--batch-size',
        '250',
      ],
      sink,
      sink,
    );
    expect(code).toBe(0);
    const line = unwrap(text)
      .split('\n')
      .find((l) => l.startsWith('batched: '));
    expect(line).toMatch(
      /^batched: 30,000 records in batches of 250 with p2c: [\d,]+ records\/s \(one record per run: [\d,]+ records\/s, [\d.]+× faster\); [\d,]+ requests, [\d,]+ records retried, 0 failed, 0 lost$/,
    );
    expect(text).toMatch(/^lost: 0$/m);
  });
});
