import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/pickers/index.js';
import { createS3Balancer, createS3Client, S3Error } from '../../src/s3/index.js';
import { startServer, type TestServer } from '../http/servers.js';
import { clientOptions, startS3, type TestS3 } from '../s3/server.js';
import { collectEvents, leaks, outcomeOf, SECRET } from './scan.js';

/**
 * Issue #14, S3: an access key id, a secret key and a session token planted in the clients, against
 * a real S3-protocol server (s3rver) that refuses them, and against an endpoint whose error
 * responses echo the signed request (its Authorization header and security token) in the body and
 * headers, as a misbehaving proxy or a debug gateway does. The SDK raises those with `$response`
 * and `$metadata` attached; nothing of them may reach an error, an event or stats.
 */
const CREDENTIALS = {
  accessKeyId: SECRET.accessKeyId,
  secretAccessKey: SECRET.secretAccessKey,
  sessionToken: SECRET.sessionToken,
};

/** An S3-style XML error that quotes the request's credentials, with echoing headers. */
function echoingError(req: IncomingMessage): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const auth = String(req.headers.authorization ?? '');
  const token = String(req.headers['x-amz-security-token'] ?? '');
  const akid = /Credential=([^/]+)\//.exec(auth)?.[1] ?? '';
  return {
    status: 403,
    headers: {
      'content-type': 'application/xml',
      'x-amz-request-id': 'REQ123',
      'x-amz-security-token': token,
      'x-echo-authorization': auth,
    },
    body: `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Access denied. Key id ${akid} is unknown; token ${token} expired. Authorization: ${auth}</Message><AWSAccessKeyId>${akid}</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 ${token}</StringToSign><CanonicalRequest>PUT /bucket-a/k
x-amz-security-token:${token}
</CanonicalRequest><RequestId>REQ123</RequestId></Error>`,
  };
}

describe('S3 credentials never leave', () => {
  let s3: TestS3;
  let echoing: TestServer;
  beforeAll(async () => {
    s3 = await startS3();
    echoing = await startServer((req, res) => {
      const { status, headers, body } = echoingError(req);
      res.writeHead(status, headers);
      res.end(body);
    });
  });
  afterAll(async () => {
    await Promise.all([s3?.close(), echoing?.close()]);
  });

  it('the scanner finds the credentials in the SDK’s own error (it can fail)', async () => {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    const client = createS3Client({ ...clientOptions(echoing.origin), credentials: CREDENTIALS });
    const raw = await outcomeOf(() =>
      client.send(new PutObjectCommand({ Bucket: 'bucket-a', Key: 'k', Body: 'v' })),
    );
    client.destroy();
    expect((raw as { $response?: unknown }).$response).toBeDefined();
    expect(leaks(raw)).toEqual(expect.arrayContaining([SECRET.accessKeyId, SECRET.sessionToken]));
  });

  it('errors from s3rver (unknown key id, missing bucket; a wrong secret, which it accepts) and from an echoing endpoint, with every event and stats: zero hits', async () => {
    const clients = [
      createS3Client({ ...clientOptions(s3.endpoint), credentials: CREDENTIALS }),
      createS3Client({
        ...clientOptions(s3.endpoint),
        credentials: {
          accessKeyId: 'S3RVER',
          secretAccessKey: SECRET.secretAccessKey,
          sessionToken: SECRET.sessionToken,
        },
      }),
      createS3Client({
        ...clientOptions(s3.endpoint),
        credentials: {
          accessKeyId: 'S3RVER',
          secretAccessKey: 'S3RVER',
          sessionToken: SECRET.sessionToken,
        },
      }),
      createS3Client({ ...clientOptions(echoing.origin), credentials: CREDENTIALS }),
    ];
    const balancer = createS3Balancer({
      targets: [
        { id: 'bad-key-id', client: clients[0]!, bucket: 'bucket-a' },
        { id: 'bad-secret', client: clients[1]!, bucket: 'bucket-b' },
        { id: 'no-bucket', client: clients[2]!, bucket: 'no-such-bucket' },
        { id: 'echoing', client: clients[3]!, bucket: 'bucket-a' },
        // Built by the balancer from options holding the credentials.
        {
          id: 'owned',
          client: { ...clientOptions(echoing.origin), credentials: CREDENTIALS },
          bucket: 'bucket-c',
        },
      ],
      picker: roundRobin(),
      retry: { attempts: 2, backoff: { baseMs: 0, maxMs: 1 } },
    });
    const events = collectEvents(balancer);
    const outcomes: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      outcomes.push(await outcomeOf(() => balancer.putObject({ key: `k${i}`, body: `v${i}` })));
      outcomes.push(
        await outcomeOf(() => balancer.upload({ key: `u${i}`, body: Buffer.alloc(16, i) })),
      );
    }
    const stats = balancer.stats();
    await balancer.close();
    for (const client of clients) client.destroy();
    const codes = new Set(
      outcomes.filter((o) => o instanceof S3Error).map((o) => (o as S3Error).s3Code),
    );
    // Each kind of refusal was met, so each was scanned.
    expect([...codes].sort()).toEqual(['AccessDenied', 'InvalidAccessKeyId', 'NoSuchBucket']);
    // s3rver does not check signatures: the shard with a wrong secret key writes (and its
    // signed requests carried the session token all the same).
    expect(outcomes.filter((o) => !(o instanceof Error)).length).toBeGreaterThan(0);
    for (const outcome of outcomes) expect(leaks(outcome)).toEqual([]);
    const echoed = outcomes.find((o) => (o as S3Error).s3Code === 'AccessDenied') as S3Error;
    // What identifies the failure stays: code, status, request id, the denial itself.
    expect(echoed.statusCode).toBe(403);
    expect(echoed.requestId).toBe('REQ123');
    expect(echoed.message).toContain('Access denied. Key id [redacted] is unknown');
    expect(events.get('failure')!.length).toBeGreaterThan(0);
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
    expect(leaks(stats)).toEqual([]);
  });

  it('an SDK error without a status (a socket timeout with $metadata and $response) is reduced too', async () => {
    const sdkLike = Object.assign(
      new Error(`socket hang up after x-amz-security-token: ${SECRET.sessionToken}`),
      {
        name: 'TimeoutError',
        $metadata: { attempts: 1, totalRetryDelay: 0 },
        $response: { headers: { 'x-amz-security-token': SECRET.sessionToken }, body: CREDENTIALS },
        request: {
          headers: { authorization: `AWS4-HMAC-SHA256 Credential=${SECRET.accessKeyId}/x` },
        },
      },
    );
    const client = {
      send: async () => {
        throw sdkLike;
      },
    };
    const balancer = createS3Balancer({
      targets: [{ id: 'flaky', client: client as never, bucket: 'bucket-a' }],
      retry: false,
    });
    const events = collectEvents(balancer);
    const error = await outcomeOf(() => balancer.putObject({ key: 'k', body: 'v' }));
    await balancer.close();
    expect(leaks(sdkLike)).not.toEqual([]);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('TimeoutError');
    expect(leaks(error)).toEqual([]);
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
  });
});
