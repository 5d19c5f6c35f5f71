import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { Balancer, consistentHash, p2c, peakEwma, weightedByLoadReport } from '../../src/index.js';
import { createS3Balancer, createS3Client, type S3Balancer } from '../../src/s3/index.js';
import { simulate } from '../../src/testing/index.js';
import { clientOptions } from '../s3/server.js';
import { expectConfigError, notABag, notAList, sparse } from './shapes.js';

/**
 * Issue #14: every public entry validates its input's shape first. Each bad shape below must end
 * in a `ConfigError` naming the field — thrown, or rejected for the entries that return a
 * promise — never a raw `TypeError` from deep inside, never a silent default.
 */
const SPEC = { id: 'a', target: 0 };
const shards = [SPEC];
const noop = async () => 'ok';

describe('the core Balancer', () => {
  let balancer: Balancer<number>;
  beforeAll(() => {
    balancer = new Balancer({ shards: [{ id: 'a', target: 0 }] });
  });
  afterAll(async () => {
    await balancer.close();
  });

  it.each(notABag())('new Balancer(%s)', async (_name, bad) => {
    await expectConfigError('options', () => new Balancer(bad as never), /^options$/);
  });

  it.each(notAList(SPEC))('new Balancer({ shards: %s })', async (_name, bad) => {
    await expectConfigError('shards', () => new Balancer({ shards: bad as never }), /^shards/);
  });

  const nested = notABag().filter(([name]) => name !== 'a function');
  // `retry: null` is in entries-core.test.ts (a core fix).
  it.each(nested.filter(([name]) => name !== 'null'))(
    'new Balancer({ retry: %s })',
    async (_name, bad) => {
      await expectConfigError(
        'retry',
        () => new Balancer({ shards, retry: bad as never }),
        /^retry/,
      );
    },
  );
  it.each(nested)('new Balancer({ retry: { backoff: %s } })', async (_name, bad) => {
    await expectConfigError(
      'retry.backoff',
      () => new Balancer({ shards, retry: { backoff: bad as never } }),
      /^retry\.backoff/,
    );
  });
  it.each(nested)('new Balancer({ retry: { budget: %s } })', async (_name, bad) => {
    await expectConfigError(
      'retry.budget',
      () => new Balancer({ shards, retry: { budget: bad as never } }),
      /^retry\.budget/,
    );
  });
  it.each(nested)('new Balancer({ health: %s })', async (_name, bad) => {
    await expectConfigError(
      'health',
      () => new Balancer({ shards, health: bad as never }),
      /^health/,
    );
  });

  it.each(notABag())('new Balancer({ picker: %s })', async (_name, bad) => {
    await expectConfigError(
      'picker',
      () => new Balancer({ shards, picker: bad as never }),
      /^picker/,
    );
  });
  it.each(notABag())('new Balancer({ clock: %s })', async (_name, bad) => {
    await expectConfigError('clock', () => new Balancer({ shards, clock: bad as never }), /^clock/);
  });

  it.each(notAList({ site: 'a' }))('new Balancer({ prefer: %s })', async (_name, bad) => {
    await expectConfigError(
      'prefer',
      () => new Balancer({ shards, prefer: bad as never }),
      /^prefer/,
    );
  });

  it.each([
    ['null', null],
    ['a Map', new Map()],
    ['a Date', new Date(0)],
    ['a string', '8'],
  ])('new Balancer({ maxInFlightPerShard: %s })', async (_name, bad) => {
    await expectConfigError(
      'maxInFlightPerShard',
      () => new Balancer({ shards, maxInFlightPerShard: bad as never }),
      /^maxInFlightPerShard$/,
    );
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', {}],
    ['a Map', new Map()],
  ])('run(%s)', async (_name, bad) => {
    await expectConfigError('run fn', () => balancer.run(bad as never), /^fn$/);
  });

  it.each(notABag())('run(fn, %s)', async (_name, bad) => {
    await expectConfigError('run options', () => balancer.run(noop, bad as never), /^run options/);
  });

  it.each([
    ['a number', 42],
    ['an object', { id: 1 }],
    ['a Map', new Map()],
    ['a Date', new Date(0)],
  ])('run(fn, { key: %s })', async (_name, bad) => {
    await expectConfigError('key', () => balancer.run(noop, { key: bad as never }), /^key$/);
  });

  it.each([
    ['an object', {}],
    ['a Map', new Map()],
    ['a string', 'abort'],
  ])('run(fn, { signal: %s })', async (_name, bad) => {
    await expectConfigError(
      'signal',
      () => balancer.run(noop, { signal: bad as never }),
      /^signal$/,
    );
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['a string', 'eu'],
    ['a sparse array', sparse({ region: 'eu' })],
    // A Map or a Date: entries-core.test.ts (a core fix).
  ])('run(fn, { require: %s })', async (_name, bad) => {
    await expectConfigError(
      'require',
      () => balancer.run(noop, { require: bad as never }),
      /require/,
    );
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', {}],
  ])('wrap(%s)', async (_name, bad) => {
    await expectConfigError('wrap fn', () => balancer.wrap(bad as never), /^fn$/);
  });

  it.each(notABag())('wrap(fn, %s)', async (_name, bad) => {
    await expectConfigError('wrap options', () => balancer.wrap(noop, bad as never), /^wrap/);
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', {}],
    ['a string', 'records'],
  ])('ingest(%s, options)', async (_name, bad) => {
    await expectConfigError(
      'ingest source',
      () => balancer.ingest(bad as never, { send: noop }),
      /^source$/,
    );
  });

  it.each(notABag())('ingest(records, %s) and createWriteStream(%s)', async (_name, bad) => {
    await expectConfigError('ingest options', () => balancer.ingest([1], bad as never), /^ingest/);
    await expectConfigError(
      'createWriteStream options',
      () => balancer.createWriteStream(bad as never),
      /^createWriteStream/,
    );
  });

  it.each(notABag())('addShard(%s)', async (_name, bad) => {
    await expectConfigError('addShard', () => balancer.addShard(bad as never), /^shard/);
  });

  it.each(notAList({ id: 'a', target: 0 }))('setShards(%s)', async (_name, bad) => {
    await expectConfigError('setShards', () => balancer.setShards(bad as never), /^shards/);
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', { id: 'a' }],
    ['a Map', new Map()],
  ])('removeShard(%s)', async (_name, bad) => {
    await expectConfigError('removeShard id', () => balancer.removeShard(bad as never), /^id$/);
  });

  it.each(notABag())('removeShard(id, %s) and close(%s)', async (_name, bad) => {
    // Its own balancer: a wrong shape that slipped through must not remove the shared one's shard.
    const balancer = new Balancer({ shards: [{ id: 'a', target: 0 }] });
    await expectConfigError(
      'removeShard options',
      () => balancer.removeShard('a', bad as never),
      /^removeShard options/,
    );
    await expectConfigError('close options', () => balancer.close(bad as never), /^close options/);
    await balancer.close();
  });
});

describe('picker factories', () => {
  const factories: [string, (options: never) => unknown][] = [
    ['p2c', p2c],
    ['peakEwma', peakEwma],
    ['consistentHash', consistentHash],
    ['weightedByLoadReport', weightedByLoadReport],
  ];
  const bags = notABag();
  it.each(
    factories.flatMap(([name, make]) =>
      bags.map(([shape, bad]) => [name, shape, make, bad] as const),
    ),
  )('%s(%s)', async (name, _shape, make, bad) => {
    await expectConfigError(name, () => make(bad as never), new RegExp(`^${name}`));
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', {}],
    ['a Map', new Map()],
  ])('consistentHash({ fallback: %s })', async (_name, bad) => {
    await expectConfigError(
      'fallback',
      () => consistentHash({ fallback: bad as never }),
      /^consistentHash\.fallback/,
    );
  });
});

describe('the HTTP transport', () => {
  let http: HttpBalancer;
  beforeAll(() => {
    http = createHttpBalancer({ origins: ['http://127.0.0.1:1'] });
  });
  afterAll(async () => {
    await http.close();
  });

  it.each(notABag())('createHttpBalancer(%s)', async (_name, bad) => {
    await expectConfigError('options', () => createHttpBalancer(bad as never), /^options$/);
  });

  it.each(notAList('http://127.0.0.1:1'))(
    'createHttpBalancer({ origins: %s })',
    async (_name, bad) => {
      await expectConfigError(
        'origins',
        () => createHttpBalancer({ origins: bad as never }),
        /^origins/,
      );
    },
  );

  it.each(notAList({ id: 'a', target: 'http://127.0.0.1:1' }))(
    'createHttpBalancer({ shards: %s })',
    async (_name, bad) => {
      await expectConfigError(
        'shards',
        () => createHttpBalancer({ shards: bad as never }),
        /^shards/,
      );
    },
  );

  it.each(notABag().filter(([name]) => name !== 'a function'))(
    'createHttpBalancer({ tls: %s })',
    async (_name, bad) => {
      await expectConfigError(
        'tls',
        () => createHttpBalancer({ origins: ['https://127.0.0.1:1'], tls: bad as never }),
        /^tls/,
      );
    },
  );

  it.each(notABag())('request(%s) and sendTo(shard, %s)', async (_name, bad) => {
    await expectConfigError('request', () => http.request(bad as never), /^request/);
    await expectConfigError('sendTo', () => http.sendTo(http.shards[0]!, bad as never), /^request/);
  });

  it.each([
    ['a number', 42],
    ['a string', 'authorization: x'],
    ['a Map', new Map([['authorization', 'x']])],
    ['a Date', new Date(0)],
    [
      'a class instance',
      new (class Headers {
        accept = 'text/plain';
      })(),
    ],
    ['an array', [['accept', 'text/plain']]],
    ['a sparse array', sparse(['accept', 'text/plain'])],
  ])('request({ headers: %s })', async (_name, bad) => {
    await expectConfigError(
      'headers',
      () => http.request({ headers: bad as never }),
      /^request\.headers/,
    );
  });

  it.each([
    ['a number', 42],
    ['a boolean', true],
    ['an object', { a: 1 }],
    ['a Map', new Map()],
    ['a Date', new Date(0)],
  ])('request({ body: %s })', async (_name, bad) => {
    await expectConfigError(
      'body',
      () => http.request({ method: 'POST', body: bad as never }),
      /^request\.body/,
    );
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['an object', { id: 'x' }],
    ['a Map', new Map()],
  ])('sendTo(%s, request)', async (_name, bad) => {
    await expectConfigError(
      'sendTo shard',
      () => http.sendTo(bad as never, { path: '/' }),
      /^shard$/,
    );
  });

  // sendTo(shard, request, ctx) with a ctx that is not a RunContext: entries-core.test.ts.

  it.each(notABag())('addShard(%s)', async (_name, bad) => {
    await expectConfigError('addShard', () => http.addShard(bad as never), /^shard/);
  });

  it.each(notAList({ id: 'b', target: 'http://127.0.0.1:2' }))(
    'setShards(%s)',
    async (_name, bad) => {
      await expectConfigError('setShards', () => http.setShards(bad as never), /^shards/);
    },
  );
});

describe('the S3 transport', () => {
  const client = createS3Client(clientOptions('http://127.0.0.1:1'));
  const target = { client, bucket: 'bucket-a' };
  let s3: S3Balancer;
  beforeAll(() => {
    s3 = createS3Balancer({ targets: [target] });
  });
  afterAll(async () => {
    await s3.close();
    client.destroy();
  });

  it.each(notABag())('createS3Balancer(%s)', async (_name, bad) => {
    await expectConfigError('options', () => createS3Balancer(bad as never), /^options$/);
  });

  it.each(notAList(target))('createS3Balancer({ targets: %s })', async (_name, bad) => {
    await expectConfigError(
      'targets',
      () => createS3Balancer({ targets: bad as never }),
      /^targets/,
    );
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['a string', 'client'],
    ['a Map', new Map([['region', 'us-east-1']])],
    ['a Date', new Date(0)],
    ['an array', [client]],
  ])('createS3Balancer({ targets: [{ client: %s }] })', async (_name, bad) => {
    await expectConfigError(
      'client',
      () => createS3Balancer({ targets: [{ client: bad as never, bucket: 'bucket-a' }] }),
      /^targets\[0\]\.client/,
    );
  });

  it.each(notABag())('putObject(%s) and upload(%s)', async (_name, bad) => {
    await expectConfigError('putObject', () => s3.putObject(bad as never), /^request/);
    await expectConfigError('upload', () => s3.upload(bad as never), /^request/);
  });

  it.each([
    ['a number', 42],
    ['a string', 'a=b'],
    ['a Map', new Map([['a', 'b']])],
    ['a Date', new Date(0)],
    ['an array', [['a', 'b']]],
  ])('putObject({ metadata: %s })', async (_name, bad) => {
    await expectConfigError(
      'metadata',
      () => s3.putObject({ key: 'k', body: 'v', metadata: bad as never }),
      /^request\.metadata/,
    );
  });

  it.each([
    ['a number', 42],
    ['a boolean', true],
    ['an object', { a: 1 }],
    ['a Map', new Map()],
  ])('putObject({ body: %s })', async (_name, bad) => {
    await expectConfigError(
      'body',
      () => s3.putObject({ key: 'k', body: bad as never }),
      /^request\.body/,
    );
  });

  it.each(notABag())('addShard(%s)', async (_name, bad) => {
    await expectConfigError('addShard', () => s3.addShard(bad as never), /^shard/);
  });

  it.each(notAList({ client, bucket: 'bucket-b' }))('setShards(%s)', async (_name, bad) => {
    await expectConfigError('setShards', () => s3.setShards(bad as never), /^shards/);
  });
});

describe('simulate()', () => {
  const shard = { id: 'a', latency: 1 };
  it.each(notABag())('simulate(%s)', async (_name, bad) => {
    await expectConfigError(
      'simulate',
      () => simulate(bad as never),
      /^(simulate options|options)$/,
    );
  });

  it.each(notAList(shard))('simulate({ shards: %s })', async (_name, bad) => {
    await expectConfigError(
      'shards',
      () => simulate({ shards: bad as never, requests: 10, seed: 1 }),
      /^shards/,
    );
  });

  // Holes in a schedule: entries-core.test.ts (a fix in the simulator's checks).
  it.each(notAList({ atMs: 1, latency: 2 }).filter(([name]) => !name.startsWith('a hole')))(
    'simulate({ shards: [{ schedule: %s }] })',
    async (_name, bad) => {
      await expectConfigError(
        'schedule',
        () => simulate({ shards: [{ ...shard, schedule: bad as never }], requests: 10, seed: 1 }),
        /^shards\[0\]\.schedule/,
      );
    },
  );

  const base = { shards: [shard], requests: 10, seed: 1 };
  const bags = notABag().filter(([name]) => name !== 'a function');
  // balancerOptions of the wrong shape: entries-core.test.ts (a fix in the simulator's checks).
  it.each(bags)('simulate({ arrivals: %s })', async (_name, bad) => {
    await expectConfigError(
      'arrivals',
      () => simulate({ ...base, arrivals: bad as never }),
      /^arrivals/,
    );
  });
  it.each(bags)('simulate({ keys: %s })', async (_name, bad) => {
    await expectConfigError('keys', () => simulate({ ...base, keys: bad as never }), /^keys/);
  });
});
