// A slow link in front of loopback shards, for bench/ingest-compression.bench.ts: one TCP proxy
// port per target port, every connection through one token bucket per direction (the link is
// shared, full duplex, as a WAN or VPN link is). Run as a forked child:
//   fork('throttle-proxy.mjs', [bitsPerSecond, ...targetPorts])
// It answers over IPC with { ports } (the proxy's, in the targets' order), and { type: 'stats' }
// with the bytes carried each way.
import net from 'node:net';

const bitsPerSecond = Number(process.argv[2]);
const targets = process.argv.slice(3).map(Number);
if (!(bitsPerSecond > 0) || targets.length === 0) {
  console.error('usage: throttle-proxy.mjs BITS_PER_SECOND PORT...');
  process.exit(2);
}

/** Bytes a direction may hold queued before its sources are paused. */
const HIGH_WATER = 256 * 1024;
const LOW_WATER = 64 * 1024;
/** Largest burst, bytes: about 5 ms of the link. */
const BURST = Math.max(16 * 1024, Math.floor(bitsPerSecond / 8 / 200));

/** One direction of the link: a FIFO of chunks drained at the link's rate. */
class Direction {
  constructor(bytesPerMs) {
    this.bytesPerMs = bytesPerMs;
    this.tokens = BURST;
    this.last = performance.now();
    /** { socket, chunk } in arrival order. */
    this.queue = [];
    this.head = 0;
    this.queued = 0;
    this.paused = new Set();
    this.timer = undefined;
    this.carried = 0;
  }

  send(from, to, chunk) {
    this.queue.push({ to, chunk });
    this.queued += chunk.length;
    if (this.queued > HIGH_WATER && !this.paused.has(from)) {
      this.paused.add(from);
      from.pause();
    }
    this.pump();
  }

  pump() {
    const now = performance.now();
    this.tokens = Math.min(BURST, this.tokens + (now - this.last) * this.bytesPerMs);
    this.last = now;
    while (this.head < this.queue.length && this.tokens >= 1) {
      const item = this.queue[this.head];
      const n = Math.min(item.chunk.length, Math.floor(this.tokens));
      if (!item.to.destroyed) item.to.write(item.chunk.subarray(0, n));
      this.tokens -= n;
      this.queued -= n;
      this.carried += n;
      if (n === item.chunk.length) this.queue[this.head++] = undefined;
      else item.chunk = item.chunk.subarray(n);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.queued < LOW_WATER && this.paused.size > 0) {
      for (const socket of this.paused) socket.resume();
      this.paused.clear();
    }
    if (this.head < this.queue.length && this.timer === undefined) {
      // The time the head needs, at least 1 ms (timers are no finer).
      const wait = Math.max(1, Math.ceil((1 - this.tokens) / this.bytesPerMs));
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
    }
  }
}

const bytesPerMs = bitsPerSecond / 8 / 1000;
const up = new Direction(bytesPerMs);
const down = new Direction(bytesPerMs);

function proxy(targetPort) {
  const server = net.createServer((client) => {
    client.setNoDelay(true);
    const upstream = net.connect({ port: targetPort, host: '127.0.0.1', noDelay: true });
    client.on('data', (chunk) => up.send(client, upstream, chunk));
    upstream.on('data', (chunk) => down.send(upstream, client, chunk));
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close);
    upstream.on('close', close);
    client.on('error', close);
    upstream.on('error', close);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

const ports = await Promise.all(targets.map(proxy));
process.send?.({ type: 'ready', ports });
process.on('message', (message) => {
  if (message.type === 'stats') process.send({ type: 'stats', up: up.carried, down: down.carried });
});
process.on('disconnect', () => process.exit(0));
