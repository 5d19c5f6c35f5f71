import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { type FakeS3, fakeClientOptions, startFakeS3 } from '../hostile/fixtures/fake-s3.js';

let fake: FakeS3 | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('a one-shot stream that an earlier call already read', () => {
  for (const method of ['putObject', 'upload'] as const) {
    it(`${method}: a second call with the same, consumed stream is refused, not stored as an empty object`, async () => {
      fake = await startFakeS3();
      const f = fake;
      let puts = 0;
      // The first put is refused after its body was read; the caller then tries again itself.
      f.answer = (r) =>
        r.op === 'PutObject' && ++puts === 1 ? { status: 500, code: 'InternalError' } : 'ok';
      const client = createS3Client(fakeClientOptions(f.endpoint));
      const s3 = createS3Balancer({ targets: [{ client, bucket: 'bkt-a' }], health: false });
      const body = Readable.from([Buffer.from('hello world')]);
      const first = await s3[method]({ key: 'k', body }).then(
        () => 'ok',
        (e: Error) => e.name,
      );
      const second = await s3[method]({ key: 'k', body }).then(
        () => 'ok',
        (e: Error) => e.name,
      );
      await s3.close();
      client.destroy();
      const stored = f.objects.get('bkt-a/k')?.body.toString();
      expect({ first, second, stored }).toEqual({
        first: expect.not.stringMatching(/^ok$/),
        second: 'ConfigError',
        stored: undefined,
      });
    });
  }
});
