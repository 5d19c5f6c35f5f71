// Loopback shards for bench/adaptive.bench.ts, in their own process: shard i serves at most
// capacities[i] requests at once for SERVICE_MS each (a timer), the rest wait in FIFO order inside
// the server, as a worker pool's queue does. Nothing but latency tells a client the capacity.
// Usage: node capacity-shards.mjs <serviceMs> <capacity>...   Prints { ports } as JSON on stdout
// and, when forked, sends it over IPC; { type: 'peaks' } answers with the most served at once.
import http from 'node:http';

const serviceMs = Number(process.argv[2] ?? 10);
const capacities = process.argv.slice(3).map(Number);
const peaks = capacities.map(() => 0);

function start(index) {
  const capacity = capacities[index];
  let busy = 0;
  const waiting = [];
  const serve = (res) => {
    busy++;
    if (busy > peaks[index]) peaks[index] = busy;
    setTimeout(() => {
      res.end('ok');
      busy--;
      const next = waiting.shift();
      if (next !== undefined) serve(next);
    }, serviceMs);
  };
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      if (busy < capacity) serve(res);
      else waiting.push(res);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

const ports = await Promise.all(capacities.map((_, i) => start(i)));
process.stdout.write(`${JSON.stringify({ ports })}\n`);
process.send?.({ type: 'ready', ports });
process.on('message', (message) => {
  if (message.type === 'peaks') process.send({ type: 'peaks', peaks: [...peaks] });
});
process.on('disconnect', () => process.exit(0));
