import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { Balancer, ConfigError } from '../../src/index.js';
import { createS3Balancer } from '../../src/s3/index.js';
import { sparse } from '../input/shapes.js';
import { collectEvents, leaks, outcomeOf, SECRET } from './scan.js';

/**
 * Issue #14: credentials and tokens in the places configuration takes them — origins (including
 * ones that fail to parse), shard specs, membership changes, TLS and S3 target options — never
 * reach a `ConfigError` (message, stack, `value`, JSON, inspect).
 */
const PW = SECRET.originPassword;
const TOKEN = SECRET.queryToken;

/** Origins a user may write, each holding a credential or a token; none is a usable origin. */
const BAD_ORIGINS = [
  `http://user:${PW}@127.0.0.1:8080`,
  `http://user:${PW}@127.0.0.1:99999`,
  `http://user:${PW}@[::1`,
  `http://user:${PW}@h:1x`,
  `http://user:${PW}@h:1x?token=${TOKEN}`,
  `http://user:${PW}@127.0.0.1:99999/?token=${TOKEN}`,
  `https://user:p@ss:${PW}@127.0.0.1:8443`,
  `h:1x?token=${TOKEN}`,
  `127.0.0.1:8080?token=${TOKEN}`,
  `http://127.0.0.1:8080/ingest?token=${TOKEN}`,
  `http://127.0.0.1:99999?token=${TOKEN}`,
  `http://127.0.0.1:8080#token=${TOKEN}`,
  `ftp://user:${PW}@127.0.0.1`,
  `user:${PW}@127.0.0.1:8080`,
  `//user:${PW}@127.0.0.1:8080`,
  ` http://user:${PW}@127.0.0.1:8080`,
];

async function configError(call: () => unknown, what: string): Promise<ConfigError> {
  const error = await outcomeOf(call);
  expect(error, what).toBeInstanceOf(ConfigError);
  expect(leaks(error), what).toEqual([]);
  return error as ConfigError;
}

describe('secrets in configuration', () => {
  it('the scanner sees a credential in a raw origin (it can fail)', () => {
    expect(leaks(BAD_ORIGINS)).toEqual([PW, TOKEN]);
  });

  it.each(BAD_ORIGINS)(
    'origin %s: a ConfigError naming the field, with no credential or token',
    async (origin) => {
      const e = await configError(() => createHttpBalancer({ origins: [origin] }), origin);
      expect(e.field).toMatch(/^origins\[0\]/);
      await configError(() => createHttpBalancer({ origins: [{ origin }] as never }), origin);
      await configError(
        () => createHttpBalancer({ shards: [{ id: 'a', target: origin }] }),
        `shards: ${origin}`,
      );
    },
  );

  it('addShard and setShards refuse a credentialed origin without echoing it', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:1'] });
    for (const origin of BAD_ORIGINS) {
      await configError(() => http.addShard({ id: 'x', target: origin }), `addShard ${origin}`);
      await configError(() => http.setShards([{ id: 'x', target: origin }]), `setShards ${origin}`);
    }
    await http.close();
  });

  it('tls with http: origins is a ConfigError, and never echoes key material', async () => {
    const tls = { key: `-----BEGIN PRIVATE KEY-----\n${SECRET.tlsKey}\n-----END PRIVATE KEY-----` };
    const e = await configError(
      () => createHttpBalancer({ origins: ['http://127.0.0.1:8080'], tls }),
      'tls + http:',
    );
    expect(e.message).toMatch(/plaintext|https:/);
    await configError(
      () => createHttpBalancer({ shards: [{ id: 'a', target: 'http://127.0.0.1:8080' }], tls }),
      'tls + http: shard',
    );
    const https = createHttpBalancer({ origins: ['https://127.0.0.1:8443'], tls });
    await configError(
      () => https.addShard({ id: 'b', target: 'http://127.0.0.1:8080' }),
      'addShard',
    );
    await https.close();
    await configError(
      () =>
        createHttpBalancer({ origins: ['https://127.0.0.1:8443'], tls: { kye: tls.key } as never }),
      'misspelled tls key',
    );
    await configError(
      () =>
        createHttpBalancer({
          origins: ['https://127.0.0.1:8443'],
          tls: { key: 7, cert: tls.key } as never,
        }),
      'tls key of the wrong type',
    );
  });

  it('a misplaced credential in any options bag is named, not echoed', async () => {
    const shards = [{ id: 'a', target: 'http://127.0.0.1:1' }];
    await configError(
      () => new Balancer({ shards, password: SECRET.unknownOption } as never),
      'core',
    );
    await configError(
      () =>
        createHttpBalancer({
          origins: ['http://127.0.0.1:1'],
          apiKey: SECRET.unknownOption,
        } as never),
      'http',
    );
    await configError(
      () => new Balancer({ shards: [{ ...shards[0]!, secret: SECRET.unknownOption }] } as never),
      'shard spec',
    );
    const balancer = new Balancer({ shards });
    await configError(
      () => balancer.run(async () => 1, { token: SECRET.unknownOption } as never),
      'run options',
    );
    await configError(
      () => balancer.wrap(async () => 1, { auth: SECRET.unknownOption } as never),
      'wrap options',
    );
    await balancer.close();
  });

  it('S3 targets with credentials: errors in their shape never echo a key, secret or token', async () => {
    const credentials = {
      accessKeyId: SECRET.accessKeyId,
      secretAccessKey: SECRET.secretAccessKey,
      sessionToken: SECRET.sessionToken,
    };
    const client = { region: 'us-east-1', endpoint: 'http://127.0.0.1:1', credentials };
    const cases: [string, () => unknown][] = [
      ['a too-short bucket', () => createS3Balancer({ targets: [{ client, bucket: 'x' }] })],
      [
        'a bad maxSockets',
        () =>
          createS3Balancer({
            targets: [{ client: { ...client, maxSockets: -1 }, bucket: 'bucket-a' }],
          }),
      ],
      [
        'a misplaced secret key',
        () =>
          createS3Balancer({
            targets: [{ client, bucket: 'bucket-a', secretAccessKey: SECRET.secretAccessKey }],
          } as never),
      ],
      [
        'credentials as the client',
        () =>
          createS3Balancer({
            targets: [
              { client: `${SECRET.accessKeyId}:${SECRET.secretAccessKey}`, bucket: 'bucket-a' },
            ],
          } as never),
      ],
      [
        'credentials as the bucket',
        () => createS3Balancer({ targets: [{ client, bucket: credentials }] } as never),
      ],
      [
        'shards instead of targets',
        () =>
          createS3Balancer({
            targets: [{ client, bucket: 'bucket-a' }],
            shards: [{ id: 'a', target: credentials }],
          } as never),
      ],
      [
        'a sparse target list',
        () => createS3Balancer({ targets: sparse({ client, bucket: 'bucket-a' }) } as never),
      ],
    ];
    for (const [what, make] of cases) await configError(make, what);
  });

  it('a core balancer whose targets hold credentials: no event payload or stats value carries them', async () => {
    const balancer = new Balancer<unknown>({
      shards: [
        { id: 'a', target: `http://user:${PW}@10.0.0.1:8080/?token=${TOKEN}` },
        { id: 'b', target: { accessKeyId: SECRET.accessKeyId, secret: SECRET.secretAccessKey } },
      ],
      retry: { attempts: 2, backoff: { baseMs: 0, maxMs: 0 } },
    });
    const events = collectEvents(balancer);
    let calls = 0;
    await balancer.run(
      async () => {
        if (++calls === 1) throw new Error('first attempt fails');
        return 'ok';
      },
      { idempotent: true, key: 'k' },
    );
    balancer.addShard({ id: 'c', target: `http://user:${PW}@10.0.0.3` });
    await balancer.removeShard('c');
    expect(events.get('pick')!.length).toBe(2);
    for (const [name, payloads] of events) expect(leaks(payloads), name).toEqual([]);
    expect(leaks(balancer.stats())).toEqual([]);
    await balancer.close();
  });
});
