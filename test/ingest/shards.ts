/**
 * Real ingest shards for the stream tests: `node:http` servers on 127.0.0.1 (port 0) that record
 * the ids they receive (the request body is the record id as text), and one undici `Pool` per
 * origin to reach them — never the global dispatcher (TOOLCHAIN trap 4).
 */

import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { Pool, request } from 'undici';

export interface IngestShard {
  origin: string;
  /** Ids this shard received, in arrival order. */
  received: number[];
  close(): Promise<void>;
}

/** Starts one shard; `respond` may answer something else than 204 for a given id. */
export async function startIngestShard(
  respond?: (id: number, res: http.ServerResponse) => boolean,
): Promise<IngestShard> {
  const received: number[] = [];
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const id = Number(body);
      if (respond?.(id, res)) return;
      received.push(id);
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function startIngestShards(
  n: number,
  respond?: (id: number, res: http.ServerResponse) => boolean,
): Promise<IngestShard[]> {
  return Promise.all(Array.from({ length: n }, () => startIngestShard(respond)));
}

/** Shards served from a worker thread (for the 100k-record runs: a core of their own). */
export interface WorkerShards {
  origins: string[];
  /** Ids each shard received, in shard order. */
  collect(): Promise<number[][]>;
  close(): Promise<void>;
}

export async function startWorkerShards(count: number): Promise<WorkerShards> {
  const worker = new Worker(new URL('./shard-worker.mjs', import.meta.url), {
    workerData: { count },
  });
  const [{ origins }] = (await once(worker, 'message')) as [{ origins: string[] }];
  return {
    origins,
    async collect() {
      worker.postMessage('collect');
      const [{ received }] = (await once(worker, 'message')) as [{ received: number[][] }];
      return received;
    },
    async close() {
      worker.postMessage('close');
      await once(worker, 'message');
      await worker.terminate();
    },
  };
}

/** One keep-alive pool per origin, and a `post` that uses the right one. */
export function pools(origins: readonly string[], connections = 8) {
  const byOrigin = new Map(origins.map((o) => [o, new Pool(o, { connections })]));
  return {
    async post(origin: string, body: string, signal?: AbortSignal): Promise<number> {
      const dispatcher = byOrigin.get(origin);
      if (dispatcher === undefined) throw new Error(`no pool for ${origin}`);
      const res = await request(`${origin}/ingest`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'text/plain' },
        dispatcher,
        signal,
      });
      await res.body.dump();
      if (res.statusCode >= 400) {
        throw Object.assign(new Error(`${origin} answered ${res.statusCode}`), {
          statusCode: res.statusCode,
          retryable: res.statusCode >= 500,
        });
      }
      return res.statusCode;
    },
    close: () => Promise.all([...byOrigin.values()].map((p) => p.close())).then(() => undefined),
  };
}
