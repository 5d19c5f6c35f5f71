/**
 * `shardwise ingest` as a real process, stopped for real. A SIGINT gives exit code 3, a saved
 * checkpoint and a summary, and a second run with the same checkpoint finishes the file. Then the
 * issue's test: a load of 1,000,000 lines into 8 shards killed with SIGKILL at 20 moments of a
 * seeded random source — spread over the file, each a random few ms after a point of progress, so
 * a kill may land anywhere (starting up, mid-batch, mid-save of a checkpoint) — and resumed each
 * time from its checkpoint. At the end the shards hold every line (0 lost), and every duplicate is
 * a line past the checkpoint when the load was killed: a resume never sends again what a
 * checkpoint passed. Those lines are the records in flight at the kill (at most the held-record
 * limit, plus up to 63 of the watermark's position sampling) and the records settled since the
 * last save (`--checkpoint-every 50` here); their counts are in the test's failure message.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../../src/sources/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { startCli, unwrap } from './run-cli.js';

/** Shards that count how many times each id arrived (the NDJSON lines carry `"id":N` first). */
class CountingShards {
  readonly copies: Uint8Array;
  distinct = 0;
  stored = 0;
  origins: string[] = [];
  readonly #servers: Server[] = [];

  constructor(readonly records: number) {
    this.copies = new Uint8Array(records);
  }

  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('error', () => {});
        req.on('end', () => {
          this.#store(Buffer.concat(chunks).toString('latin1'));
          res.writeHead(200, { 'content-length': '0' }).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      this.#servers.push(server);
      this.origins.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    }
  }

  #store(body: string): void {
    for (let at = body.indexOf('{"id":'); at >= 0; at = body.indexOf('{"id":', at + 6)) {
      let id = 0;
      for (let i = at + 6; ; i++) {
        const c = body.charCodeAt(i);
        if (c < 48 || c > 57) break;
        id = id * 10 + (c - 48);
      }
      if (this.copies[id] === 0) this.distinct++;
      this.copies[id] = Math.min(255, this.copies[id]! + 1);
      this.stored++;
    }
  }

  /** Distinct ids from `from` on that some shard holds. */
  heldFrom(from: number): number {
    let n = 0;
    for (let id = from; id < this.records; id++) if (this.copies[id]! > 0) n++;
    return n;
  }

  /** Resolves once nothing new arrived for `quietMs` (bounded by `maxMs`). */
  async settle(quietMs = 150, maxMs = 5_000): Promise<void> {
    const end = Date.now() + maxMs;
    let last = -1;
    while (last !== this.stored && Date.now() < end) {
      last = this.stored;
      await new Promise((resolve) => setTimeout(resolve, quietMs));
    }
  }

  async close(): Promise<void> {
    await Promise.all(
      this.#servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.closeAllConnections();
            s.close(() => resolve());
          }),
      ),
    );
  }
}

function writeFile(path: string, records: number): void {
  const parts: string[] = [];
  for (let id = 0; id < records; id++) {
    parts.push(`{"id":${id},"tenant":"t${id % 97}","msg":"event ${id} ok ................"}\n`);
  }
  writeFileSync(path, parts.join(''));
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardwise-kill-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('shardwise ingest, killed and resumed', () => {
  it('SIGINT: exit code 3, a checkpoint and a summary; a second run finishes the file', async () => {
    const records = 300_000;
    const shards = new CountingShards(records);
    await shards.start(4);
    try {
      const file = join(dir, 'sigint.jsonl');
      writeFile(file, records);
      const checkpoint = join(dir, 'sigint.ckpt');
      const args = ['ingest', file, '--to', shards.origins.join(','), '--checkpoint', checkpoint];
      const first = startCli(args);
      const deadline = Date.now() + 30_000;
      while (shards.distinct < 20_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      first.child.kill('SIGINT');
      const stopped = await first.done;
      expect(stopped.code).toBe(3);
      const out = unwrap(stopped.out);
      expect(out).toMatch(/^shardwise ingest: stopped by SIGINT after \d+\.\d s$/m);
      expect(out).toMatch(/^checkpoint: .*sigint\.ckpt, after line [\d,]+ of .*sigint\.jsonl$/m);
      const saved = (await loadCheckpoint(checkpoint))!;
      expect(saved.position!.line).toBeGreaterThanOrEqual(20_000);
      expect(saved.position!.line).toBeLessThan(records);

      const second = await startCli(args).done;
      expect(second.code).toBe(0);
      expect(unwrap(second.err)).toContain('resuming after line');
      await shards.settle();
      expect(shards.distinct).toBe(records); // 0 lost
    } finally {
      await shards.close();
    }
  }, 90_000);

  it('SIGKILL at 20 seeded random moments over a 1,000,000-line load: 0 lost, every duplicate past a checkpoint', async () => {
    const records = 1_000_000;
    const kills = 20;
    const shards = new CountingShards(records);
    await shards.start(8);
    try {
      const file = join(dir, 'big.jsonl');
      writeFile(file, records);
      const checkpoint = join(dir, 'big.ckpt');
      const args = [
        'ingest',
        file,
        '--to',
        shards.origins.join(','),
        '--checkpoint',
        checkpoint,
        '--checkpoint-every',
        '50',
      ];
      const random = seededRandom(2032);
      // Points of progress spread over the file, each kill a random 0–40 ms after its point.
      const points = Array.from({ length: kills }, () => 0.03 + random() * 0.94)
        .sort((a, b) => a - b)
        .map((f) => Math.floor(f * records));
      const killed: { point: number; line: number; past: number }[] = [];
      const deadline = Date.now() + 80_000;
      for (const point of points) {
        const run = startCli(args, 60_000);
        let exited = false;
        run.done.then(() => {
          exited = true;
        });
        while (shards.distinct < point && !exited && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 40)));
        if (exited) break; // it finished the file first
        run.child.kill('SIGKILL');
        const ran = await run.done;
        expect(ran.signal).toBe('SIGKILL');
        await shards.settle();
        const line = (await loadCheckpoint(checkpoint))?.position?.line ?? 0;
        killed.push({ point, line, past: shards.heldFrom(line) });
      }
      const last = await startCli(args, 60_000).done;
      expect(last.code, last.err).toBe(0);
      await shards.settle();

      const duplicates = shards.stored - shards.distinct;
      const figures = JSON.stringify({ killed, duplicates, stored: shards.stored });
      expect(killed.length, figures).toBeGreaterThanOrEqual(kills - 2);
      expect(shards.distinct, figures).toBe(records); // 0 lost
      // A resume sends again only what lies past its checkpoint.
      expect(duplicates, figures).toBeLessThanOrEqual(killed.reduce((n, k) => n + k.past, 0));
      // The checkpoints moved with the load: a kill never sent it back to the start.
      expect(killed.at(-1)!.line, figures).toBeGreaterThan(records / 2);
    } finally {
      await shards.close();
    }
  }, 120_000);
});
