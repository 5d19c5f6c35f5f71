/**
 * A bound on compressions in flight. Node's asynchronous zlib calls (and `@mongodb-js/zstd`'s)
 * run on the libuv threadpool, a process-wide FIFO of a few threads that also serves
 * `dns.lookup` (every new connection to a host name), `fs` and `crypto`. A producer that starts
 * a compression per batch as fast as it encodes would queue hundreds of jobs there, and a DNS
 * lookup would wait behind all of them. The gate keeps the excess in its own queue instead; it
 * leaves one thread of the pool free for that other work, and one core for the main thread,
 * which encodes, sends and reads the responses (on 2 cores, 3 compressions at once were no
 * faster than 1 and made the event loop wait for a core: bench/compression.bench.ts).
 */
import os from 'node:os';

/** libuv's default threadpool size. */
const DEFAULT_POOL = 4;
/** libuv's cap on `UV_THREADPOOL_SIZE`. */
const MAX_POOL = 1024;

/**
 * The threadpool's size as libuv reads it at its first use: `UV_THREADPOOL_SIZE` when it is an
 * integer from 1 to 1024, else 4.
 */
export function threadpoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.UV_THREADPOOL_SIZE;
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_POOL) : DEFAULT_POOL;
}

/**
 * Compressions at once for a pool of `poolSize` threads on `cores` cores: all threads but one,
 * and no more than the cores but one (at least one).
 */
export function gateSize(poolSize: number, cores: number): number {
  return Math.max(1, Math.min(poolSize - 1, cores - 1));
}

/**
 * Runs tasks with at most `limit` of them in flight; the rest wait in arrival order.
 *
 * @example
 * const gate = new Gate(3);
 * const out = await gate.run(() => gzipAsync(bytes));
 */
export class Gate {
  readonly limit: number;
  #active = 0;
  /** Waiting starts, oldest first from `#head` (the array is compacted as it drains). */
  #waiting: (() => void)[] = [];
  #head = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`a gate's limit must be a positive integer, got ${limit}`);
    }
    this.limit = limit;
  }

  /** Tasks running now. */
  get active(): number {
    return this.#active;
  }

  /** Tasks waiting for a turn. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /** Runs `task` when fewer than `limit` tasks are in flight; settles as it does. */
  run<R>(task: () => Promise<R>): Promise<R> {
    if (this.#active < this.limit) return this.#start(task);
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push(() => {
        this.#start(task).then(resolve, reject);
      });
    });
  }

  #start<R>(task: () => Promise<R>): Promise<R> {
    this.#active++;
    let promise: Promise<R>;
    try {
      promise = task();
    } catch (error) {
      promise = Promise.reject(error);
    }
    return promise.finally(() => this.#next());
  }

  #next(): void {
    this.#active--;
    if (this.#head === this.#waiting.length) return;
    const start = this.#waiting[this.#head]!;
    this.#waiting[this.#head++] = noop;
    if (this.#head === this.#waiting.length) {
      this.#waiting = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#waiting.length) {
      this.#waiting = this.#waiting.slice(this.#head);
      this.#head = 0;
    }
    start();
  }
}

function noop(): void {}

let shared: Gate | undefined;

/** The process's one gate for compressions (the threadpool is the process's too). */
export function compressionGate(): Gate {
  shared ??= new Gate(gateSize(threadpoolSize(), os.availableParallelism()));
  return shared;
}
