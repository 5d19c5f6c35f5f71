/**
 * Real `node:http` servers on 127.0.0.1 for the transport's integration tests: counts of
 * connections and requests, and a way to kill one and bring it back on the same port.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export type Handler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: Buffer,
  server: TestServer,
) => void;

export interface TestServer {
  origin: string;
  port: number;
  /** `connection` events seen, over every incarnation. */
  connections: number;
  /** Connections open now. */
  open: number;
  requests: number;
  /** Server-side timestamps (performance.now()) of each request's arrival. */
  arrivals: number[];
  server: http.Server;
  /** Destroys the server at once: listener closed, every connection cut. */
  kill(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Read the request body before calling the handler (default true). */
  readBody?: boolean;
  tls?: { cert: string | Buffer; key: string | Buffer };
}

export async function startServer(
  handler: Handler,
  options: ServerOptions = {},
): Promise<TestServer> {
  const readBody = options.readBody !== false;
  let server!: http.Server;
  const state: TestServer = {
    origin: '',
    port: 0,
    connections: 0,
    open: 0,
    requests: 0,
    arrivals: [],
    get server() {
      return server;
    },
    kill: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    restart: async () => {
      make();
      await listen(state.port);
    },
    close: async () => {
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    state.requests++;
    state.arrivals.push(performance.now());
    if (!readBody) {
      handler(req, res, Buffer.alloc(0), state);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks), state));
    req.on('error', () => {});
  };
  const make = () => {
    server =
      options.tls === undefined
        ? http.createServer({ keepAliveTimeout: 30_000 }, onRequest)
        : https.createServer({ ...options.tls, keepAliveTimeout: 30_000 }, onRequest);
    server.on(options.tls === undefined ? 'connection' : 'secureConnection', (socket) => {
      state.connections++;
      state.open++;
      socket.on('close', () => state.open--);
    });
  };
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  make();
  await listen(0);
  state.port = (server.address() as AddressInfo).port;
  state.origin = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${state.port}`;
  return state;
}

export async function startServers(n: number, handler: Handler, options?: ServerOptions) {
  return Promise.all(Array.from({ length: n }, () => startServer(handler, options)));
}

/** A port nothing listens on (bound, then released). */
export async function deadPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/**
 * Runs `total` tasks with `concurrency` workers; bounded in count and in time (throws past
 * `deadlineMs`, so a stuck transport fails the test instead of hanging it).
 */
export async function runAll(
  total: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
  deadlineMs = 25_000,
): Promise<void> {
  const deadline = performance.now() + deadlineMs;
  let next = 0;
  const worker = async () => {
    while (next < total) {
      if (performance.now() > deadline)
        throw new Error(`runAll: past ${deadlineMs} ms at ${next}/${total}`);
      const i = next++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
