import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import { createS3Client } from '../../src/s3/index.js';
import { sleep, startServer, type TestServer } from '../http/servers.js';
import { clientOptions } from '../s3/server.js';

/**
 * `createS3Client`'s own durations (src/s3/client.ts) go to Node timers in the SDK's handler,
 * which overflow past 2³¹ − 1 ms and fire after ~1 ms: such a value must be refused (or capped),
 * as every other duration is, and one past 365 days must be a `ConfigError`.
 */
describe('createS3Client durations', () => {
  let silent: TestServer;
  beforeAll(async () => {
    silent = await startServer(() => {});
  });
  afterAll(async () => {
    await silent.close();
  });

  it.each(['connectionTimeoutMs', 'socketTimeoutMs'])(
    '%s of 2³¹ ms does not overflow a timer (no TimeoutOverflowWarning)',
    async (name) => {
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(w.name);
      process.on('warning', onWarning);
      let client: ReturnType<typeof createS3Client> | undefined;
      try {
        client = createS3Client({ ...clientOptions(silent.origin), [name]: 2 ** 31 });
      } catch (error) {
        // Refusing the value is keeping the promise too.
        expect(error).toBeInstanceOf(ConfigError);
        process.off('warning', onWarning);
        return;
      }
      void client
        .send(new PutObjectCommand({ Bucket: 'bucket-a', Key: 'k', Body: 'v' }))
        .catch(() => {});
      await sleep(100);
      process.off('warning', onWarning);
      client.destroy();
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    },
  );

  it.each(['connectionTimeoutMs', 'socketTimeoutMs'])(
    '%s past 365 days is a ConfigError',
    (name) => {
      expect(() =>
        createS3Client({ ...clientOptions(silent.origin), [name]: 366 * 86_400_000 }),
      ).toThrow(ConfigError);
    },
  );
});
