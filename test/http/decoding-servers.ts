/**
 * Shards that decompress what they receive, as an ingest server does, and keep the account a
 * ledger must match: every request's wire bytes, its content-encoding, the body decoded, and the
 * bytes of every response body they sent.
 */
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { startServer, type TestServer } from './servers.js';

const zstd = createRequire(import.meta.url)('@mongodb-js/zstd') as {
  decompress(bytes: Buffer): Promise<Buffer>;
};

export interface Received {
  path: string;
  encoding: string | undefined;
  /** The body as it came over the connection. */
  wire: Buffer;
  /** The body decoded (what the producer meant). */
  raw: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

export interface DecodingServer extends TestServer {
  received: Received[];
  /** Response body bytes sent. */
  answered: number;
}

export async function decode(encoding: string | undefined, wire: Buffer): Promise<Buffer> {
  if (encoding === undefined) return wire;
  if (encoding === 'gzip') return zlib.gunzipSync(wire);
  if (encoding === 'br') return zlib.brotliDecompressSync(wire);
  if (encoding === 'zstd') return zstd.decompress(wire);
  throw new Error(`unknown content-encoding ${encoding}`);
}

/**
 * A shard that decodes every body; `status(path, n, headers)` picks the status of its n-th request
 * (0 first, in arrival order), `reply(path)` the response body (default `ok`). `received` is in
 * arrival order; each entry's `raw` is decoded before the shard answers.
 */
export async function startDecodingServer(
  options: {
    status?: (path: string, n: number, headers: Received['headers']) => number;
    reply?: (path: string) => string;
  } = {},
): Promise<DecodingServer> {
  const received: Received[] = [];
  let self: DecodingServer | undefined;
  const server = await startServer(async (req, res, body) => {
    const n = received.length;
    const encoding = req.headers['content-encoding'] as string | undefined;
    const path = req.url ?? '/';
    // Its place taken now: a later request decoded sooner must not take its turn (or its n).
    const entry: Received = { path, encoding, wire: body, raw: body, headers: req.headers };
    received.push(entry);
    entry.raw = await decode(encoding, body);
    res.statusCode = options.status?.(path, n, req.headers) ?? 200;
    const reply = Buffer.from(options.reply?.(path) ?? 'ok');
    self!.answered += reply.length;
    res.end(reply);
  });
  self = Object.assign(server, { received, answered: 0 });
  return self;
}

/** ~100-byte NDJSON records. */
export function ndjson(records: number, from = 0): string {
  let out = '';
  for (let i = from; i < from + records; i++) {
    out += `${JSON.stringify({ id: i, host: `web-${i % 17}`, level: i % 5 === 0 ? 'warn' : 'info', msg: `request ${i} served in ${(i * 7) % 300} ms` })}\n`;
  }
  return out;
}
