// A real S3-protocol server (s3rver) for bench/s3-put.bench.ts, in its own process so the client
// under test keeps its CPU figures to itself. Stores objects on tmpfs when there is one (a put
// costs ~2 ms there, ~10 ms on disk). Sends { port } over IPC once listening; exits (removing its
// directory) when the parent disconnects.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

const buckets = process.argv.slice(2);
const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const directory = await mkdtemp(join(base, 'shardwise-bench-s3-'));
const server = new S3rver({
  port: 0,
  address: '127.0.0.1',
  silent: true,
  directory,
  configureBuckets: buckets.map((name) => ({ name })),
});
const { port } = await server.run();
process.send?.({ type: 'ready', port });
process.on('disconnect', async () => {
  await server.close();
  await rm(directory, { recursive: true, force: true });
  process.exit(0);
});
