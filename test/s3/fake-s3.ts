/** A minimal S3-protocol server on 127.0.0.1 whose answers a test scripts per request. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../src/s3/index.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export interface Seen {
  method: string;
  url: string;
  op: string;
  bucket: string;
  key: string;
  body: Buffer;
  headers: IncomingMessage['headers'];
}

/** Return true when the handler answered (or will never answer); false for the default. */
export type Script = (req: Seen, res: ServerResponse) => boolean | Promise<boolean>;

export interface FakeS3 {
  endpoint: string;
  seen: Seen[];
  /** Uploads created and neither completed nor aborted. */
  open: Set<string>;
  objects: Map<string, Buffer>;
  script: Script | undefined;
  client(): S3Client;
  close(): Promise<void>;
}

function opOf(method: string, url: URL): string {
  const q = url.searchParams;
  if (method === 'POST' && q.has('uploads')) return 'CreateMultipartUpload';
  if (method === 'PUT' && q.has('partNumber')) return 'UploadPart';
  if (method === 'POST' && q.has('uploadId')) return 'CompleteMultipartUpload';
  if (method === 'DELETE' && q.has('uploadId')) return 'AbortMultipartUpload';
  if (method === 'PUT') return 'PutObject';
  if (method === 'GET') return 'GetObject';
  return `${method}?`;
}

export function s3Error(
  res: ServerResponse,
  status: number,
  code: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/xml', ...headers });
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code} says the fake</Message><RequestId>req-1</RequestId></Error>`,
  );
}

export async function startFake(): Promise<FakeS3> {
  const sockets = new Set<import('node:net').Socket>();
  const clients: S3Client[] = [];
  let nextId = 0;
  const fake: FakeS3 = {
    endpoint: '',
    seen: [],
    open: new Set(),
    objects: new Map(),
    script: undefined,
    client() {
      const c = createS3Client(clientOptions(fake.endpoint));
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    req.on('error', () => {});
    res.on('error', () => {});
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const [, bucket = '', ...rest] = url.pathname.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const seen: Seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      op: opOf(req.method ?? '', url),
      bucket,
      key,
      body: Buffer.concat(chunks),
      headers: req.headers,
    };
    fake.seen.push(seen);
    if (fake.script !== undefined && (await fake.script(seen, res))) return;
    const q = url.searchParams;
    switch (seen.op) {
      case 'CreateMultipartUpload': {
        const id = `up-${++nextId}`;
        fake.open.add(id);
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
        );
        return;
      }
      case 'UploadPart':
        res.writeHead(200, { etag: `"part-${q.get('partNumber')}"` });
        res.end();
        return;
      case 'CompleteMultipartUpload':
        fake.open.delete(q.get('uploadId')!);
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><ETag>"multi-etag"</ETag></CompleteMultipartUploadResult>`,
        );
        return;
      case 'AbortMultipartUpload':
        fake.open.delete(q.get('uploadId')!);
        res.writeHead(204);
        res.end();
        return;
      case 'PutObject':
        fake.objects.set(`${bucket}/${key}`, seen.body);
        res.writeHead(200, { etag: '"put-etag"' });
        res.end();
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

export function clientOptions(endpoint: string) {
  return {
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'FAKEKEYID', secretAccessKey: 'FAKESECRET' },
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
  };
}
