// Loopback ingest shards for bench/http-throughput.bench.ts, in their own process (so the client
// under test keeps a core to itself). Prints its ports as JSON on stdout and, when forked, sends
// them over IPC. IPC messages: { type: 'delays', delays: number[] } sets each shard's response
// delay in ms (0 = answer at once); { type: 'stats' } answers with connection and request counts.
import http from 'node:http';

const count = Number(process.argv[2] ?? 8);
const delays = new Array(count).fill(0);
const connections = new Array(count).fill(0);
const requests = new Array(count).fill(0);

function start(index) {
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    requests[index]++;
    req.on('data', () => {});
    req.on('end', () => {
      const delay = delays[index];
      if (delay === 0) res.end('ok');
      else setTimeout(() => res.end('ok'), delay);
    });
  });
  server.on('connection', () => connections[index]++);
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

const ports = await Promise.all(Array.from({ length: count }, (_, i) => start(i)));
process.stdout.write(`${JSON.stringify({ ports })}\n`);
process.send?.({ type: 'ready', ports });
process.on('message', (message) => {
  if (message.type === 'delays') {
    for (let i = 0; i < count; i++) delays[i] = message.delays[i] ?? 0;
    process.send({ type: 'ok' });
  } else if (message.type === 'stats') {
    process.send({ type: 'stats', connections: [...connections], requests: [...requests] });
  }
});
process.on('disconnect', () => process.exit(0));
