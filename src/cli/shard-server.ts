/**
 * The demo's ingest shards: N `node:http` servers on 127.0.0.1 (port 0) in a child process, so
 * the producer keeps its own core. A request body is one JSON record or NDJSON (one per line). The parent steers them over IPC: make one slow, make one fail,
 * collect the record ids every shard received (to prove nothing was lost).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ShardCommand =
  | { cmd: 'set'; shard: number; delayMs?: number; failing?: boolean }
  | { cmd: 'reset' }
  | { cmd: 'collect' }
  | { cmd: 'stop' };

export type ShardReply = { ports: number[] } | { ids: number[]; perShard: number[] } | { ok: true };

interface ShardState {
  delayMs: number;
  failing: boolean;
  received: number;
}

export async function serveShards(count: number): Promise<{
  ports: number[];
  handle: (m: ShardCommand) => ShardReply;
  close: () => Promise<void>;
}> {
  const states: ShardState[] = [];
  const ids = new Set<number>();
  const servers: http.Server[] = [];
  for (let i = 0; i < count; i++) {
    const state: ShardState = { delayMs: 0, failing: false, received: 0 };
    states.push(state);
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (state.failing) {
          res.writeHead(503, { 'content-type': 'text/plain' }).end('shard is failing (demo)');
          return;
        }
        const answer = () => {
          // One JSON record, or NDJSON: one record per line (the batched pass).
          let records: { id: number }[];
          try {
            records = Buffer.concat(chunks)
              .toString('utf8')
              .split('\n')
              .filter((line) => line !== '')
              .map((line) => JSON.parse(line) as { id: number });
          } catch {
            res.writeHead(400).end('bad json');
            return;
          }
          for (const record of records) ids.add(record.id);
          state.received += records.length;
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        };
        if (state.delayMs > 0) setTimeout(answer, state.delayMs);
        else answer();
      });
    });
    server.keepAliveTimeout = 30_000;
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  }
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  const handle = (m: ShardCommand): ShardReply => {
    if (m.cmd === 'set') {
      const state = states[m.shard];
      if (state !== undefined) {
        if (m.delayMs !== undefined) state.delayMs = m.delayMs;
        if (m.failing !== undefined) state.failing = m.failing;
      }
      return { ok: true };
    }
    if (m.cmd === 'reset') {
      ids.clear();
      for (const state of states) Object.assign(state, { delayMs: 0, failing: false, received: 0 });
      return { ok: true };
    }
    if (m.cmd === 'collect') return { ids: [...ids], perShard: states.map((s) => s.received) };
    return { ok: true };
  };
  const close = async () => {
    for (const server of servers) server.closeAllConnections();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  };
  return { ports, handle, close };
}

/** Entry point when run as the child process: `shard-server <count>`. */
export async function childMain(count: number): Promise<void> {
  const shards = await serveShards(count);
  const send = (reply: ShardReply) => process.send?.(reply);
  process.on('message', (m: ShardCommand) => {
    if (m.cmd === 'stop') {
      void shards.close().then(() => process.exit(0));
      return;
    }
    send(shards.handle(m));
  });
  process.on('disconnect', () => process.exit(0));
  send({ ports: shards.ports });
}
