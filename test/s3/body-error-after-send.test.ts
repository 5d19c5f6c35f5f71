import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client, roundRobin } from '../../src/s3/index.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/** An S3-like server that answers every PUT with a 500 at once, before reading its body. */
async function earlyFailServer(): Promise<{ endpoint: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    req.on('error', () => {});
    res.on('error', () => {});
    res.writeHead(500, { 'content-type': 'application/xml', connection: 'close' });
    res.end(
      '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>boom</Message><RequestId>r1</RequestId></Error>',
    );
    req.resume();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const clientOptions = (endpoint: string) => ({
  endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'FAKEKEYID', secretAccessKey: 'FAKESECRET' },
  requestChecksumCalculation: 'WHEN_REQUIRED' as const,
  responseChecksumValidation: 'WHEN_REQUIRED' as const,
});

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe('putObject: a body stream that fails after its attempt ended', () => {
  it('no uncaught exception when the stream the balancer made for an attempt fails after that attempt was refused', async () => {
    const server = await earlyFailServer();
    close = server.close;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    const s3 = createS3Balancer({
      targets: [
        { client: createS3Client(clientOptions(server.endpoint)), bucket: 'bkt-a' },
        { client: createS3Client(clientOptions(server.endpoint)), bucket: 'bkt-b' },
      ],
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 2 }, budget: false },
      health: false,
    });
    let made = 0;
    const outcome = await s3
      .putObject({
        key: 'late-failure.bin',
        contentLength: 2048,
        // A replayable body: the balancer makes one stream per attempt. Each stream's source
        // fails 150 ms in (a disk read that errors late).
        body: () => {
          made++;
          return Readable.from(
            (async function* () {
              yield Buffer.alloc(1024, 1);
              await new Promise((r) => setTimeout(r, 150));
              throw Object.assign(new Error('disk read failed late'), { code: 'EIO' });
            })(),
          );
        },
        timeoutMs: 5_000,
      })
      .then(
        () => 'resolved',
        (e: Error) => e.name,
      );
    // Let the abandoned streams' sources fail.
    await new Promise((r) => setTimeout(r, 400));
    await s3.close();
    process.removeListener('uncaughtException', onUncaught);
    expect({
      made,
      outcomeSettled: typeof outcome,
      uncaught: uncaught.map((e) => (e as Error).message),
    }).toEqual({ made: 2, outcomeSettled: 'string', uncaught: [] });
  });
});
