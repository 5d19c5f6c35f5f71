// Loopback ingest shards for the fleet bench and test, in their own process: `count` HTTP
// servers on 127.0.0.1, each serving `capacity` requests at once for ~`serviceMs` (FIFO queue
// behind), each answering with an ORCA `endpoint-load-metrics` header (its utilization and rate
// over the last half second). It records every shard's concurrent in-flight count over time,
// integrated exactly per window, and the requests that arrive per window.
//
// argv: count capacity serviceMs. IPC in: { type: 'start', t0Ns, windowMs, durationMs, slow }
// (`slow`: { shard, atMs, factor } or null: from `atMs` after t0, that shard serves `factor`
// times slower); { type: 'report' }. IPC out: { type: 'ready', ports }, { type: 'started' },
// { type: 'report', shards: [{ area, arrivals, completed, inFlight }] }.
import http from 'node:http';

const count = Number(process.argv[2] ?? 8);
const capacity = Number(process.argv[3] ?? 4);
const serviceMs = Number(process.argv[4] ?? 10);
const ORCA_PERIOD_MS = 500;

let t0 = process.hrtime.bigint();
let windowMs = 100;
let windows = 0;
let slow = null;
/** A small seeded generator (xorshift32): service-time jitter that repeats run to run. */
let seed = 0x9e3779b9;
function random() {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 4294967296;
}

const nowMs = () => Number(process.hrtime.bigint() - t0) / 1e6;

class Shard {
  constructor(index) {
    this.index = index;
    this.inFlight = 0;
    this.serving = 0;
    this.queue = [];
    this.busyMs = 0;
    this.completed = 0;
    this.header = 'TEXT cpu_utilization=0, rps_fractional=0, eps=0';
    this.lastBusy = 0;
    this.lastCompleted = 0;
    this.reset();
  }

  reset() {
    this.area = new Float64Array(windows);
    this.arrivals = new Uint32Array(windows);
    this.last = nowMs();
    this.completed = 0;
    this.lastCompleted = 0;
  }

  /** Adds `inFlight × dt` since the last change to the windows it spans. */
  integrate(now) {
    let from = Math.max(0, this.last);
    const to = Math.min(now, windows * windowMs);
    while (from < to) {
      const w = Math.floor(from / windowMs);
      const end = Math.min(to, (w + 1) * windowMs);
      this.area[w] += this.inFlight * (end - from);
      from = end;
    }
    this.last = now;
  }

  arrive(res) {
    const now = nowMs();
    this.integrate(now);
    this.inFlight++;
    const w = Math.floor(now / windowMs);
    if (w >= 0 && w < windows) this.arrivals[w]++;
    this.queue.push(res);
    this.next();
  }

  next() {
    while (this.serving < capacity && this.queue.length > 0) {
      const res = this.queue.shift();
      this.serving++;
      const factor =
        slow !== null && slow.shard === this.index && nowMs() >= slow.atMs ? slow.factor : 1;
      const ms = serviceMs * factor * (0.5 + random());
      setTimeout(() => this.finish(res, ms), ms);
    }
  }

  finish(res, ms) {
    this.serving--;
    this.busyMs += ms;
    this.completed++;
    res.setHeader('endpoint-load-metrics', this.header);
    res.end('ok');
    this.integrate(nowMs());
    this.inFlight--;
    this.next();
  }

  /** The ORCA figures of the last period: utilization of the workers, completions per second. */
  tickOrca() {
    const busy = this.busyMs - this.lastBusy;
    const done = this.completed - this.lastCompleted;
    this.lastBusy = this.busyMs;
    this.lastCompleted = this.completed;
    const utilization = Math.min(1, busy / (capacity * ORCA_PERIOD_MS));
    const rps = (done * 1000) / ORCA_PERIOD_MS;
    this.header = `TEXT cpu_utilization=${utilization.toFixed(4)}, rps_fractional=${rps.toFixed(1)}, eps=0`;
  }
}

const shards = Array.from({ length: count }, (_, i) => new Shard(i));
setInterval(() => {
  for (const shard of shards) shard.tickOrca();
}, ORCA_PERIOD_MS).unref();

function listen(shard) {
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    req.on('data', () => {});
    req.on('end', () => shard.arrive(res));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

const ports = await Promise.all(shards.map(listen));
process.send?.({ type: 'ready', ports });
process.on('message', (message) => {
  if (message.type === 'start') {
    t0 = BigInt(message.t0Ns);
    windowMs = message.windowMs;
    windows = Math.ceil(message.durationMs / windowMs);
    slow = message.slow;
    for (const shard of shards) shard.reset();
    process.send({ type: 'started' });
  } else if (message.type === 'report') {
    const now = nowMs();
    process.send({
      type: 'report',
      shards: shards.map((shard) => {
        shard.integrate(now);
        return {
          area: [...shard.area],
          arrivals: [...shard.arrivals],
          completed: shard.completed,
          inFlight: shard.inFlight,
        };
      }),
    });
  }
});
process.on('disconnect', () => process.exit(0));
