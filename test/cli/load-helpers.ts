/**
 * What the tests of `shardwise ingest` and `shardwise replay` share: the command run in this
 * process (its output captured, its signals an emitter the test fires), JSONL files of numbered
 * lines, and small NDJSON shards on 127.0.0.1 that keep every line and every request's headers.
 */
import { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { main } from '../../src/cli/main.js';

/** What a command run printed, and how it ended. */
export interface Ran {
  code: number;
  out: string;
  err: string;
}

/** A sink that keeps what is written to it. */
export function sink(tty = false): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      text += String(chunk);
      callback();
    },
  });
  if (tty) Object.assign(stream, { isTTY: true });
  return { stream, text: () => text };
}

/**
 * Runs the command in this process. `signals` is what it hears SIGINT and SIGTERM on (the test
 * emits them); a third signal's exit is recorded, never taken. `err`, when given, is the sink its
 * stderr goes to (a test can read it while the command runs).
 */
export async function runCli(
  argv: string[],
  o: { signals?: EventEmitter; tty?: boolean; err?: ReturnType<typeof sink> } = {},
): Promise<Ran & { exited: number[] }> {
  const out = sink();
  const err = o.err ?? sink(o.tty);
  const exited: number[] = [];
  const code = await main(argv, out.stream, err.stream, {
    signals: o.signals ?? new EventEmitter(),
    exit: (c) => exited.push(c),
  });
  return { code, out: out.text(), err: err.text(), exited };
}

/** The line of record `id`: compact JSON, as the shards read it back. */
export function line(id: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ id, ...extra, msg: `record ${id} ${'x'.repeat(40)}` });
}

/** Writes records `from` to `to − 1` as a JSONL file (gzipped when the name ends in .gz). */
export function writeLines(
  path: string,
  from: number,
  to: number,
  extra: (id: number) => Record<string, unknown> = () => ({}),
): string[] {
  const lines: string[] = [];
  for (let id = from; id < to; id++) lines.push(line(id, extra(id)));
  const text = `${lines.join('\n')}\n`;
  writeFileSync(path, path.endsWith('.gz') ? gzipSync(text) : text);
  return lines;
}

/** One request a shard took: its lines and its headers. */
export interface Taken {
  lines: string[];
  headers: IncomingHttpHeaders;
  /** The body's length as it came (compressed, when it was). */
  wireBytes: number;
}

/** Shards on 127.0.0.1 that store every NDJSON line they are sent. */
export interface LineShards {
  origins: string[];
  /** Requests each shard stored, in arrival order. */
  taken: Taken[][];
  /** Every line stored, all shards together (duplicates included). */
  lines(): string[];
  /** Each shard answers 400 to a batch holding a line containing `text` (stores none of it). */
  refuse(text: string | undefined): void;
  /** Each shard waits `ms` before answering (and storing). */
  delay(ms: number): void;
  /** Each shard stops answering (stores nothing) until `heal()`. */
  hang(): void;
  /** Requests left without an answer now. */
  hung(): number;
  heal(): void;
  /** Resolves once a shard has stored at least `n` lines in all. */
  until(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startLineShards(count: number): Promise<LineShards> {
  const taken: Taken[][] = Array.from({ length: count }, () => []);
  let refusing: string | undefined;
  let delayMs = 0;
  let hanging = false;
  const hung: (() => void)[] = [];
  let stored = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const servers: Server[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const encoding = req.headers['content-encoding'];
        const decoded =
          encoding === 'gzip'
            ? gunzipSync(body)
            : encoding === 'br'
              ? brotliDecompressSync(body)
              : body;
        const lines = decoded.toString('utf8').split('\n');
        if (lines.at(-1) === '') lines.pop();
        if (hanging) {
          hung.push(() => res.destroy());
          return;
        }
        if (refusing !== undefined && lines.some((l) => l.includes(refusing!))) {
          res.writeHead(400).end('bad line');
          return;
        }
        const store = () => {
          taken[i]!.push({ lines, headers: req.headers, wireBytes: body.length });
          stored += lines.length;
          for (const w of [...waiters]) {
            if (stored >= w.n) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve();
            }
          }
          res.writeHead(200, { 'content-length': '0' }).end();
        };
        if (delayMs > 0) setTimeout(store, delayMs);
        else store();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }
  return {
    origins: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`),
    taken,
    lines: () => taken.flatMap((requests) => requests.flatMap((r) => r.lines)),
    refuse: (text) => {
      refusing = text;
    },
    delay: (ms) => {
      delayMs = ms;
    },
    hang: () => {
      hanging = true;
    },
    hung: () => hung.length,
    heal: () => {
      hanging = false;
      for (const drop of hung.splice(0)) drop();
    },
    until: (n) =>
      stored >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    close: async () => {
      for (const drop of hung.splice(0)) drop();
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      );
    },
  };
}

/** The ids of `lines` (each a JSON object with an `id`). */
export function idsOf(lines: readonly string[]): number[] {
  return lines.map((l) => (JSON.parse(l) as { id: number }).id);
}
