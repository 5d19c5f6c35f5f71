/**
 * A small driver for profiling the HTTP request path (not a benchmark: it prints no ratio).
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/http-profile.ts [shardwise|raw] [requests]
 *
 * Same shape as bench/http-throughput.bench.ts (8 loopback shards in a child process, 1 KiB
 * POSTs, concurrency 64), one contender, one long round, so the profile is the request path's.
 * The shards' process is not profiled; tsx's loader thread writes a second, small profile (the
 * larger file is the client's). Open it in Chrome DevTools or VS Code, or sum self times by URL.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Pool } from 'undici';
import { createHttpBalancer } from '../src/http/index.js';
import { p2c } from '../src/pickers/index.js';

const SHARDS = 8;
const CONCURRENCY = 64;
const BODY = Buffer.alloc(1024, 97);
const HEADERS = { 'content-type': 'application/octet-stream' };

const which = process.argv[2] ?? 'shardwise';
const total = Number(process.argv[3] ?? 100_000);

function startShards(): Promise<{ child: ChildProcess; origins: string[] }> {
  const child = fork(new URL('./http-fixtures/servers.mjs', import.meta.url), [String(SHARDS)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    // Not this process's flags: only the client is profiled.
    execArgv: [],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { ports: number[] }) => {
      resolve({ child, origins: m.ports.map((p) => `http://127.0.0.1:${p}`) });
    });
  });
}

function contender(origins: string[]): { send(): Promise<void>; close(): Promise<void> } {
  if (which === 'raw') {
    const pools = origins.map((o) => new Pool(o, { connections: 8, pipelining: 1 }));
    let next = 0;
    return {
      async send() {
        const pool = pools[next]!;
        next = next + 1 === pools.length ? 0 : next + 1;
        const res = await pool.request({
          method: 'POST',
          path: '/ingest',
          body: BODY,
          headers: HEADERS,
        });
        await res.body.arrayBuffer();
      },
      close: async () => {
        await Promise.all(pools.map((p) => p.close()));
      },
    };
  }
  const http = createHttpBalancer({ origins, picker: p2c(), connectionsPerShard: 8 });
  return {
    async send() {
      await http.request({
        method: 'POST',
        path: '/ingest',
        body: BODY,
        headers: HEADERS,
        idempotent: true,
      });
    },
    close: () => http.close(),
  };
}

const { child, origins } = await startShards();
const c = contender(origins);
let next = 0;
const worker = async () => {
  while (next < total) {
    next++;
    await c.send();
  }
};
const t0 = performance.now();
const cpu0 = process.cpuUsage();
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
console.log(
  `${which}: ${total} requests, ${((total / ms) * 1000).toFixed(0)} req/s, ${((cpu.user + cpu.system) / total).toFixed(1)} µs CPU/req`,
);
await c.close();
child.disconnect();
