import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { createS3Client } from '../../src/s3/index.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export const BUCKETS = ['bucket-a', 'bucket-b', 'bucket-c'] as const;

/** A real S3-protocol server (s3rver) on 127.0.0.1, on a free port, with the test buckets. */
export interface TestS3 {
  endpoint: string;
  port: number;
  /** A keep-alive client for `endpoint` (or another endpoint) with the settings s3rver needs. */
  client(endpoint?: string): S3Client;
  close(): Promise<void>;
}

export async function startS3(): Promise<TestS3> {
  // s3rver writes each object and its metadata with many small file operations: on tmpfs a put
  // costs ~2 ms, on this machine's disk ~10 ms.
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const directory = await mkdtemp(join(base, 'shardwise-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: BUCKETS.map((name) => ({ name })),
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const clients: S3Client[] = [];
  return {
    endpoint,
    port,
    client(at = endpoint) {
      const client = createS3Client(clientOptions(at));
      clients.push(client);
      return client;
    },
    async close() {
      for (const client of clients) client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Client settings for s3rver: path-style, fixed credentials, checksums only when required. */
export function clientOptions(endpoint: string) {
  return {
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    // Newer SDKs wrap bodies in checksummed chunked framing that s3rver stores verbatim.
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
  };
}

/** A port nothing listens on (bound, then released): connections to it are refused. */
export async function deadPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The object's bytes, or undefined when it does not exist. */
export async function getBytes(
  client: S3Client,
  bucket: string,
  key: string,
): Promise<Buffer | undefined> {
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
}
