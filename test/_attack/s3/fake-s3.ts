import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export type Op =
  | 'PutObject'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'Other';

export interface SeenRequest {
  op: Op;
  method: string;
  bucket: string;
  key: string;
  uploadId?: string;
  partNumber?: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** What the fake answers: 'ok', an S3 error, or never (hold the request open). */
export type Answer =
  | 'ok'
  | 'hang'
  | { status: number; code: string; headers?: Record<string, string>; message?: string };

export interface FakeS3 {
  endpoint: string;
  seen: SeenRequest[];
  /** Open multipart uploads (created, neither completed nor aborted), by upload id. */
  open: Map<string, { bucket: string; key: string; parts: Map<number, Buffer> }>;
  /** Completed objects by `bucket/key`. */
  objects: Map<string, { body: Buffer; headers: Record<string, string | string[] | undefined> }>;
  answer: (req: SeenRequest) => Answer | Promise<Answer>;
  close(): Promise<void>;
}

function opOf(method: string, q: URLSearchParams): Op {
  if (method === 'PUT' && q.has('partNumber') && q.has('uploadId')) return 'UploadPart';
  if (method === 'PUT') return 'PutObject';
  if (method === 'POST' && q.has('uploads')) return 'CreateMultipartUpload';
  if (method === 'POST' && q.has('uploadId')) return 'CompleteMultipartUpload';
  if (method === 'DELETE' && q.has('uploadId')) return 'AbortMultipartUpload';
  return 'Other';
}

function xmlError(
  res: ServerResponse,
  status: number,
  code: string,
  message = 'fake error',
  headers: Record<string, string> = {},
) {
  res.writeHead(status, {
    'content-type': 'application/xml',
    'x-amz-request-id': 'REQ123',
    ...headers,
  });
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>REQ123</RequestId></Error>`,
  );
}

export async function startFakeS3(): Promise<FakeS3> {
  let nextId = 1;
  const hung: ServerResponse[] = [];
  const fake: FakeS3 = {
    endpoint: '',
    seen: [],
    open: new Map(),
    objects: new Map(),
    answer: () => 'ok',
    close: async () => {},
  };
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the client gave up mid-body
    }
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://x');
    const [, bucket = '', ...rest] = url.pathname.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const q = url.searchParams;
    const op = opOf(req.method ?? 'GET', q);
    const seen: SeenRequest = {
      op,
      method: req.method ?? 'GET',
      bucket,
      key,
      uploadId: q.get('uploadId') ?? undefined,
      partNumber: q.has('partNumber') ? Number(q.get('partNumber')) : undefined,
      headers: req.headers,
      body,
    };
    fake.seen.push(seen);
    const answer = await fake.answer(seen);
    if (answer === 'hang') {
      hung.push(res);
      return;
    }
    if (answer !== 'ok') {
      xmlError(res, answer.status, answer.code, answer.message, answer.headers);
      return;
    }
    switch (op) {
      case 'PutObject':
        fake.objects.set(`${bucket}/${key}`, { body, headers: req.headers });
        res.writeHead(200, { etag: '"put-etag"' });
        res.end();
        return;
      case 'CreateMultipartUpload': {
        const id = `up-${nextId++}`;
        fake.open.set(id, { bucket, key, parts: new Map() });
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
        );
        return;
      }
      case 'UploadPart': {
        const up = fake.open.get(seen.uploadId!);
        if (up === undefined) return xmlError(res, 404, 'NoSuchUpload');
        up.parts.set(seen.partNumber!, body);
        res.writeHead(200, { etag: `"part-${seen.partNumber}"` });
        res.end();
        return;
      }
      case 'CompleteMultipartUpload': {
        const up = fake.open.get(seen.uploadId!);
        if (up === undefined) return xmlError(res, 404, 'NoSuchUpload');
        fake.open.delete(seen.uploadId!);
        const nums = [...up.parts.keys()].sort((a, b) => a - b);
        fake.objects.set(`${bucket}/${key}`, {
          body: Buffer.concat(nums.map((n) => up.parts.get(n)!)),
          headers: req.headers,
        });
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key}</Key><ETag>"mp-etag"</ETag></CompleteMultipartUploadResult>`,
        );
        return;
      }
      case 'AbortMultipartUpload':
        fake.open.delete(seen.uploadId!);
        res.writeHead(204);
        res.end();
        return;
      default:
        xmlError(res, 400, 'NotImplemented');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = async () => {
    for (const r of hung) r.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}

export function fakeClientOptions(endpoint: string) {
  return {
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: {
      accessKeyId: 'AKIAFAKEFAKEFAKE',
      secretAccessKey: 'fakeSecretKeyThatMustNeverLeak123',
    },
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
  };
}

export const MiB = 1024 * 1024;

export function payload(size: number, seed = 0x9e3779b9): Buffer {
  const out = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i + 4 <= size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i);
  }
  return out;
}

/** Resolves to 'timeout' if `p` has not settled after `ms` (a hang detector, not a duration check). */
export function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<'timeout'>((resolve) => {
      t = setTimeout(() => resolve('timeout'), ms);
    }),
  ]);
}
