// Ingest shards in a worker thread, so the servers use the second core while the test's
// balancer uses the first. Each shard records the ids it receives (the body is the id as text).
// Messages in: 'collect' → posts { received: number[][] }; 'close' → closes the servers.
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const received = [];
const servers = [];
for (let i = 0; i < workerData.count; i++) {
  const ids = [];
  received.push(ids);
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      ids.push(Number(body));
      res.statusCode = 204;
      res.end();
    });
  });
  servers.push(server);
}
await Promise.all(servers.map((s) => new Promise((resolve) => s.listen(0, '127.0.0.1', resolve))));
parentPort.postMessage({ origins: servers.map((s) => `http://127.0.0.1:${s.address().port}`) });
parentPort.on('message', async (message) => {
  if (message === 'collect') parentPort.postMessage({ received });
  if (message === 'close') {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise((resolve) => {
            s.closeAllConnections();
            s.close(resolve);
          }),
      ),
    );
    parentPort.postMessage({ closed: true });
  }
});
