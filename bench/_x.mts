import { fork } from 'node:child_process';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { roundRobin } from '../src/pickers/index.js';
import { createS3Balancer, createS3Client } from '../src/s3/index.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const BUCKETS = ['bench-a', 'bench-b', 'bench-c'];
const which = process.argv[2] ?? 'shardwise';
const total = Number(process.argv[3] ?? 4000);
const child = fork(new URL('./s3-fixtures/server.mjs', import.meta.url), BUCKETS, {
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  execArgv: [],
});
const port = await new Promise<number>((r) =>
  child.once('message', (m: { port: number }) => r(m.port)),
);
const client = createS3Client({
  endpoint: `http://127.0.0.1:${port}`,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});
const s3 = createS3Balancer({
  targets: BUCKETS.map((bucket) => ({ client, bucket })),
  picker: roundRobin(),
  maxInFlightPerShard: 16,
});
const BODY = Buffer.alloc(4096, 120);
const put =
  which === 'bare'
    ? (i: number) =>
        client.send(
          new PutObjectCommand({
            Bucket: BUCKETS[i % 3],
            Key: `objects/${i}.bin`,
            Body: BODY,
            ContentLength: 4096,
            ContentType: 'application/octet-stream',
          }),
        )
    : (i: number) =>
        s3.putObject({
          key: `objects/${i}.bin`,
          body: BODY,
          contentType: 'application/octet-stream',
        });
let next = 0;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (next < total) await put(next++);
  }),
);
const cpu = process.cpuUsage(cpu0);
console.log(
  which,
  'ms/put',
  ((performance.now() - t0) / total).toFixed(3),
  'cpu µs/put',
  ((cpu.user + cpu.system) / total).toFixed(0),
);
await s3.close();
client.destroy();
child.disconnect();
