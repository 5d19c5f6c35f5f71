/**
 * Runs a fleet on this machine: one process of HTTP shards (`shards.mjs`) and N forked producer
 * processes (`producer.ts`), started together on the monotonic clock they share. Used by
 * bench/fleet.bench.ts and test/http/fleet.test.ts.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import type { DoneMessage, PickerName, RunMessage } from './producer.js';

export interface ShardReport {
  /** ∫ in-flight dt per window (ms × calls). */
  area: number[];
  /** Requests that arrived per window. */
  arrivals: number[];
  completed: number;
  /** In flight when the report was taken. */
  inFlight: number;
}

export interface Shards {
  origins: string[];
  child: ChildProcess;
  close(): Promise<void>;
}

export interface FleetRun {
  shards: ShardReport[];
  producers: DoneMessage[];
  windowMs: number;
}

export interface FleetRunOptions {
  picker: PickerName;
  workers: number;
  durationMs: number;
  windowMs?: number;
  /** The shard that turns slow, when, and by how much (default: none). */
  slow?: { shard: number; atMs: number; factor: number } | null;
  count?: number;
  blackoutMs?: number;
  /** Fail past this many ms of wall time (default durationMs + 30 s). */
  deadlineMs?: number;
}

/** The next message of `type` from `child`, bounded in time. */
function reply<T>(child: ChildProcess, type: string, timeoutMs = 60_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', listener);
      reject(new Error(`no '${type}' message within ${timeoutMs} ms`));
    }, timeoutMs);
    const listener = (message: { type?: string }) => {
      if (message?.type !== type) return;
      clearTimeout(timer);
      child.off('message', listener);
      resolve(message as T);
    };
    child.on('message', listener);
  });
}

export async function startShards(count = 8, capacity = 4, serviceMs = 10): Promise<Shards> {
  const child = fork(
    new URL('./shards.mjs', import.meta.url),
    [String(count), String(capacity), String(serviceMs)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const { ports } = await reply<{ ports: number[] }>(child, 'ready');
  return {
    origins: ports.map((port) => `http://127.0.0.1:${port}`),
    child,
    close: () => stop(child),
  };
}

export async function startProducers(n: number): Promise<ChildProcess[]> {
  const children = Array.from({ length: n }, () =>
    fork(new URL('./producer.ts', import.meta.url), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(children.map((child) => reply(child, 'ready', 60_000)));
  return children;
}

export async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(children.map(stop));
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.disconnect();
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** One run: every producer with `picker` against the shards; returns what both sides recorded. */
export async function runFleet(
  shards: Shards,
  producers: ChildProcess[],
  options: FleetRunOptions,
): Promise<FleetRun> {
  const windowMs = options.windowMs ?? 100;
  // Start a little ahead, so every process has the message before the first request.
  const t0 = process.hrtime.bigint() + 300_000_000n;
  shards.child.send({
    type: 'start',
    t0Ns: t0.toString(),
    windowMs,
    durationMs: options.durationMs,
    slow: options.slow ?? null,
  });
  await reply(shards.child, 'started');
  const message: RunMessage = {
    type: 'run',
    origins: shards.origins,
    picker: options.picker,
    workers: options.workers,
    startNs: t0.toString(),
    untilNs: (t0 + BigInt(options.durationMs) * 1_000_000n).toString(),
    blackoutMs: options.blackoutMs ?? 1_000,
  };
  if (options.count !== undefined) message.count = options.count;
  const deadline = options.deadlineMs ?? options.durationMs + 30_000;
  const results = producers.map((child) => reply<DoneMessage>(child, 'done', deadline));
  for (const child of producers) child.send(message);
  const done = await Promise.all(results);
  shards.child.send({ type: 'report' });
  const report = await reply<{ shards: ShardReport[] }>(shards.child, 'report');
  return { shards: report.shards, producers: done, windowMs };
}
