/**
 * Loads a JSONL file into a fleet of HTTP ingest shards, as fast as the shards take it and
 * without holding the file in memory: the file is read line by line, and `ingest` reads the next
 * line only when the balancer has room. One line per request by default; with `batch`, lines go
 * in NDJSON batches, one request per batch (`http.ingest`), many times faster.
 *
 *   npx tsx examples/jsonl-to-http.ts                      # sample data, 3 local shards
 *   npx tsx examples/jsonl-to-http.ts data.jsonl http://10.0.0.1:8080 http://10.0.0.2:8080
 *   BATCH=500 npx tsx examples/jsonl-to-http.ts            # the same, in batches of 500 lines
 *
 * `shardwise/http` keeps one keep-alive connection pool per shard; `sendTo` posts a line through
 * the pool of the shard the balancer picked. Statuses follow shardwise's rules: 4xx is the
 * record's fault (not retried), 5xx is the shard's (retried on another shard), 429 / 503 +
 * Retry-After is push-back.
 */
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { type IngestProgress, type IngestSummary, peakEwma } from 'shardwise';
import { createHttpBalancer } from 'shardwise/http';

/** One line of the file. */
export interface LineRecord {
  /** 1-based line number, for error reports. */
  line: number;
  /** The line as read: sent as the request body. */
  text: string;
  /** The record's `id` field, if it has one: the routing key for hashing pickers. */
  id: string | undefined;
}

export interface JsonlToHttpOptions {
  /** The JSONL file. */
  file: string;
  /** Shard origins, e.g. `http://10.0.0.1:8080`. */
  origins: string[];
  /** Request path on every shard (default `/ingest`). */
  path?: string;
  /** Where progress and the summary go (default stdout). A TTY gets a progress bar. */
  out?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Least time between two progress updates, ms (default 250). */
  progressMs?: number;
  /** Connections per shard (default 8). */
  connectionsPerShard?: number;
  /** Lines per request: send NDJSON batches of up to this many lines (default: one line each). */
  batch?: number;
}

/** Reads `file` line by line (never whole), skipping blank lines. */
export async function* readJsonl(
  file: string,
  onBytes?: (bytes: number) => void,
): AsyncGenerator<LineRecord> {
  const lines = createInterface({
    input: createReadStream(file),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let line = 0;
  for await (const text of lines) {
    line++;
    onBytes?.(Buffer.byteLength(text) + 1);
    if (text.trim() === '') continue;
    yield { line, text, id: idOf(text) };
  }
}

function idOf(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { id?: unknown }).id;
    return id === undefined || id === null ? undefined : String(id);
  } catch {
    return undefined; // the shard judges a malformed line (and answers 400)
  }
}

/** Sends every line of `options.file` to the shards; resolves with the ingest summary. */
export async function main(options: JsonlToHttpOptions): Promise<IngestSummary<LineRecord>> {
  const out = options.out ?? process.stdout;
  const path = options.path ?? '/ingest';
  const connections = options.connectionsPerShard ?? 8;
  const balancer = createHttpBalancer({
    origins: options.origins,
    picker: peakEwma(),
    connectionsPerShard: connections, // also each shard's in-flight cap: the rest waits here
    maxQueued: 1_000, // at most this many lines wait in memory
    timeoutMs: 30_000,
  });
  const headers = { 'content-type': 'application/x-ndjson' };
  const fileBytes = (await stat(options.file)).size;
  let bytesRead = 0;
  const bar = out.isTTY === true;
  const onProgress = (p: IngestProgress) => {
    const rate = p.elapsedMs > 0 ? Math.round((p.written * 1000) / p.elapsedMs) : 0;
    if (bar) {
      const done = fileBytes === 0 ? 1 : Math.min(1, bytesRead / fileBytes);
      const width = 30;
      const filled = Math.round(done * width);
      out.write(
        `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(done * 100).toFixed(0).padStart(3)}%  ` +
          `${p.written} written  ${p.failed} failed  ${rate} rec/s  in flight ${p.inFlight}  `,
      );
    } else {
      out.write(
        `progress: written=${p.written} failed=${p.failed} retries=${p.retries} rate=${rate}/s queued=${p.queued} inFlight=${p.inFlight}\n`,
      );
    }
  };
  const lines = readJsonl(options.file, (n) => {
    bytesRead += n;
  });
  const progressMs = options.progressMs ?? 250;
  try {
    const summary =
      options.batch === undefined
        ? await balancer.ingest(lines, {
            send: (shard, record, ctx) =>
              balancer.sendTo(shard, { method: 'POST', path, headers, body: record.text }, ctx),
            key: (record) => record.id,
            bytes: (record) => Buffer.byteLength(record.text),
            // Records carry their id: a second delivery is harmless, so failed attempts retry.
            idempotent: true,
            progressMs,
            onProgress,
          })
        : // Batches of lines, one NDJSON request each: the lines are the records' encoding
          // already, so they are joined as they are (and measured by their own length).
          await balancer.ingest(lines, {
            path,
            encode: (records) => `${records.map((r) => r.text).join('\n')}\n`,
            key: (record) => record.id,
            batch: { maxRecords: options.batch, size: (r) => Buffer.byteLength(r.text) + 1 },
            progressMs,
            onProgress,
          });
    if (bar) out.write('\n');
    out.write(`${formatSummary(summary)}\n`);
    return summary;
  } finally {
    await balancer.close(); // drains, then closes the pools
  }
}

/** The summary as a few lines of text (the figures every summary has, batched or not). */
export function formatSummary(
  summary: Pick<
    IngestSummary<LineRecord>,
    'written' | 'failed' | 'errors' | 'bytes' | 'retries' | 'durationMs' | 'perShard'
  >,
): string {
  const lines = [
    `written: ${summary.written}`,
    `failed: ${summary.failed}`,
    `retries: ${summary.retries}`,
    `bytes: ${summary.bytes}`,
    `seconds: ${(summary.durationMs / 1000).toFixed(2)}`,
    ...Object.entries(summary.perShard).map(([id, n]) => `  ${id}: ${n}`),
  ];
  for (const { record, error } of summary.errors.slice(0, 10)) {
    lines.push(`  line ${record.line}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (summary.errors.length > 10) lines.push(`  … and ${summary.errors.length - 10} more`);
  return lines.join('\n');
}

/** Local ingest shards for trying the example: they count the lines they receive. */
export async function startLocalShards(count: number) {
  const received: string[][] = [];
  const servers = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const lines: string[] = [];
      received[i] = lines;
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          // A body is one line, or NDJSON: several lines (batches).
          for (const line of Buffer.concat(chunks).toString('utf8').split('\n')) {
            if (line !== '') lines.push(line);
          }
          res.statusCode = 204;
          res.end();
        });
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      return server;
    }),
  );
  return {
    origins: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`),
    received,
    close: () =>
      Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      ).then(() => undefined),
  };
}

/** Writes `count` sample records to a JSONL file. */
export async function writeSample(file: string, count: number): Promise<void> {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    lines.push(JSON.stringify({ id: `rec-${i}`, at: 1_700_000_000 + i, value: (i * 7919) % 1000 }));
  }
  await writeFile(file, `${lines.join('\n')}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, ...origins] = process.argv.slice(2);
  const batch = process.env.BATCH === undefined ? undefined : Number(process.env.BATCH);
  if (file !== undefined && origins.length > 0) {
    const summary = await main({ file, origins, batch });
    process.exitCode = summary.failed === 0 ? 0 : 1;
  } else {
    // Out of the box: a sample file and three local shards.
    const dir = await mkdtemp(join(tmpdir(), 'shardwise-jsonl-'));
    const sample = join(dir, 'sample.jsonl');
    await writeSample(sample, 20_000);
    const shards = await startLocalShards(3);
    console.log(`sample: ${sample}\nshards: ${shards.origins.join(' ')}`);
    try {
      await main({ file: sample, origins: shards.origins, batch });
    } finally {
      await shards.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
}
