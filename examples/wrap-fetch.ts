/**
 * Spreads an existing upload function across shards without rewriting it: `balancer.wrap` turns
 * `upload(origin, name, body, signal)` into `put(name, body)`, which picks a shard, calls
 * `upload` with that shard's origin, measures it, and retries elsewhere when it may.
 *
 *   npx tsx examples/wrap-fetch.ts                          # 3 local shards
 *   npx tsx examples/wrap-fetch.ts http://10.0.0.1:8080 http://10.0.0.2:8080
 *
 * The upload uses undici's own `fetch` with an explicit `dispatcher` (a keep-alive `Agent`).
 * Importing undici 7 would otherwise replace Node 20's global fetch dispatcher, so this example
 * never calls `setGlobalDispatcher` and never relies on the global `fetch`.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Balancer, PushBackError, peakEwma } from 'shardwise';
import { Agent, fetch } from 'undici';

/** One keep-alive connection pool per origin, shared by every call of `upload`. */
export const agent = new Agent({ connections: 8, keepAliveTimeout: 4_000 });

/** The function a codebase already has: PUT one object to one origin. */
export async function upload(
  origin: string,
  name: string,
  body: string,
  signal?: AbortSignal,
): Promise<{ status: number; etag: string | null }> {
  const response = await fetch(`${origin}/objects/${encodeURIComponent(name)}`, {
    method: 'PUT',
    body,
    headers: { 'content-type': 'application/json' },
    signal,
    dispatcher: agent,
  });
  await response.arrayBuffer(); // read to the end so the connection is reused
  if (response.status === 429) {
    // Load, not ill health: the balancer sends this shard less for the advised time.
    throw new PushBackError(Number(response.headers.get('retry-after') ?? 1) * 1000);
  }
  if (!response.ok) {
    // 4xx: the request is at fault, another shard would refuse it too.
    throw Object.assign(new Error(`${origin} answered ${response.status}`), {
      status: response.status,
      retryable: response.status >= 500,
    });
  }
  return { status: response.status, etag: response.headers.get('etag') };
}

export interface WrapFetchOptions {
  /** Shard origins. */
  origins: string[];
  /** Objects to upload (default 1 000). */
  count?: number;
}

/** Uploads `count` objects through the wrapped function; resolves with where they went. */
export async function main(options: WrapFetchOptions) {
  const balancer = new Balancer<string>({
    shards: options.origins.map((origin) => ({ id: origin, target: origin })),
    picker: peakEwma(), // the default: the shard with the lowest latency × (in flight + 1)
    maxInFlightPerShard: 8,
    timeoutMs: 10_000,
  });
  const put = balancer.wrap(
    (shard, { signal }, name: string, body: string) => upload(shard.target, name, body, signal),
    {
      bytes: (_name, body) => Buffer.byteLength(body), // counted in the shard's bytesInFlight
      idempotent: true, // a PUT of the same name and body may be repeated
    },
  );

  const count = options.count ?? 1_000;
  const perShard: Record<string, number> = {};
  balancer.on('success', ({ shardId }) => {
    perShard[shardId] = (perShard[shardId] ?? 0) + 1;
  });
  const failed: { name: string; error: unknown }[] = [];
  for (let i = 0; i < count; i++) {
    const name = `object-${i}.json`;
    await balancer.ready(); // backpressure: wait while maxQueued calls wait
    put(name, JSON.stringify({ i })).catch((error: unknown) => failed.push({ name, error }));
  }
  await balancer.drain();
  await balancer.close();
  return { perShard, failed, stats: balancer.stats() };
}

/** Local object stores for trying the example: each keeps what it is sent. */
export async function startLocalStores(count: number) {
  const stores: Map<string, string>[] = [];
  const servers = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const objects = new Map<string, string>();
      stores[i] = objects;
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          if (req.method !== 'PUT' || !req.url?.startsWith('/objects/')) {
            res.statusCode = 405;
            res.end();
            return;
          }
          objects.set(
            decodeURIComponent(req.url.slice('/objects/'.length)),
            Buffer.concat(chunks).toString('utf8'),
          );
          res.setHeader('etag', `"${objects.size}"`);
          res.statusCode = 201;
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
    stores,
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

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const given = process.argv.slice(2);
  const local = given.length === 0 ? await startLocalStores(3) : undefined;
  try {
    const { perShard, failed } = await main({ origins: local?.origins ?? given });
    console.log('uploads per shard:', perShard);
    console.log(`failed: ${failed.length}`);
  } finally {
    await local?.close();
    await agent.close();
  }
}
