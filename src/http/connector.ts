/**
 * Where a shard's connections come from: undici's connector (TCP or TLS, keep-alive probes,
 * connect timeout), with `noDelay` applied, and a stash of warm connections opened ahead of the
 * first request. undici's clients connect lazily, on their first request, and a `Pool` has no bare
 * "connect": warming opens the sockets here, through the same connector, and hands them to the
 * clients as they connect — so the first requests pay no TCP (or TLS) handshake, and no request
 * is sent to warm up.
 */
import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';

type Connector = buildConnector.connector;
type ConnectOptions = buildConnector.Options;
type Callback = buildConnector.Callback;

/** What one `warm()` call saw: connections that opened, and attempts that failed. */
export interface WarmResult {
  opened: number;
  failed: number;
}

export class ShardConnector {
  readonly #base: Connector;
  readonly #noDelay: boolean;
  /** The origin's connect options, as undici's client passes them. */
  readonly #target: ConnectOptions;
  /** Warm connections nobody has taken yet, with the listener that drops them if they close. */
  readonly #idle = new Map<Socket, () => void>();
  /** Warm connections still opening. */
  readonly #opening = new Set<Promise<boolean>>();
  /** Clients waiting for a warm connection that is still opening. */
  readonly #waiters: Array<(socket: Socket | undefined) => void> = [];
  #closed = false;

  constructor(origin: string, base: Connector, noDelay: boolean) {
    this.#base = base;
    this.#noDelay = noDelay;
    const url = new URL(origin);
    // As undici's client does: an IPv6 host without its brackets.
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.#target = { host: url.host, hostname, protocol: url.protocol, port: url.port };
  }

  /** Warm connections open and not yet used. */
  get idle(): number {
    return this.#idle.size;
  }

  /**
   * undici's `connect` option: a warm connection when one is open (or opening and not promised
   * to another client), else a new one.
   */
  readonly connect: Connector = (options, callback) => {
    const socket = this.#take();
    if (socket !== undefined) {
      // Asynchronous, as a real connect is: undici handles the callback outside its own call.
      queueMicrotask(() => callback(null, socket));
      return;
    }
    if (this.#waiters.length < this.#opening.size) {
      this.#waiters.push((warm) => {
        if (warm !== undefined) callback(null, warm);
        else this.#open(options, callback);
      });
      return;
    }
    this.#open(options, callback);
  };

  /**
   * Opens connections until `wanted` are open or opening, counting the `connected` ones the pool
   * holds; resolves when every warm-up under way has settled. A failed attempt is counted, never
   * thrown: the shard's first request will connect (or fail) as it would have without warming.
   */
  async warm(wanted: number, connected: number): Promise<WarmResult> {
    const missing = wanted - connected - this.#idle.size - this.#opening.size;
    for (let i = 0; i < missing && !this.#closed; i++) this.#warmOne();
    const results = await Promise.all([...this.#opening]);
    let opened = 0;
    for (const ok of results) if (ok) opened++;
    return { opened, failed: results.length - opened };
  }

  /** Ends every warm connection nobody took; later warm-ups end theirs at once. */
  close(): void {
    this.#closed = true;
    for (const [socket, onClose] of this.#idle) {
      socket.off('close', onClose);
      socket.destroy();
    }
    this.#idle.clear();
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }

  #open(options: ConnectOptions, callback: Callback): void {
    const socket = this.#base(options, callback) as unknown as Socket | undefined;
    // undici's connector always turns Nagle off; turn it back on when asked.
    if (!this.#noDelay) socket?.setNoDelay(false);
  }

  #warmOne(): void {
    let resolve!: (ok: boolean) => void;
    const opening = new Promise<boolean>((r) => {
      resolve = r;
    });
    this.#opening.add(opening);
    const settle = (socket: Socket | undefined) => {
      this.#opening.delete(opening);
      const waiter = this.#waiters.shift();
      if (socket === undefined) waiter?.(undefined);
      else if (waiter !== undefined) waiter(socket);
      else if (this.#closed) socket.destroy();
      else this.#stash(socket);
      resolve(socket !== undefined);
    };
    try {
      this.#open(this.#target, (error, socket) => settle(error === null ? socket : undefined));
    } catch {
      settle(undefined);
    }
  }

  #stash(socket: Socket): void {
    const onClose = () => this.#idle.delete(socket);
    socket.once('close', onClose);
    // Like undici's idle keep-alive connections: they do not keep the process alive.
    socket.unref();
    this.#idle.set(socket, onClose);
  }

  #take(): Socket | undefined {
    for (const [socket, onClose] of this.#idle) {
      this.#idle.delete(socket);
      socket.off('close', onClose);
      if (socket.destroyed || socket.readyState !== 'open') {
        socket.destroy();
        continue;
      }
      // undici un-refs an idle connection itself, and refs it only if it saw it un-ref'd.
      socket.ref();
      return socket;
    }
    return undefined;
  }
}
