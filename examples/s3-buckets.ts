/**
 * Spreads objects across three S3 buckets with shardwise/s3: one keep-alive client, three
 * targets, consistent hashing on the object key, `ready()` backpressure. It writes the same keys
 * twice, in two passes running at once, then lists the buckets: with strict affinity (the default
 * of `consistentHash()`) every key is in exactly one bucket, however busy a bucket was — a keyed
 * put waits for its own bucket rather than landing in another.
 *
 * Run against any S3 endpoint:
 *   S3_ENDPOINT=http://127.0.0.1:9000 S3_BUCKETS=ingest-a,ingest-b,ingest-c \
 *   S3_ACCESS_KEY_ID=… S3_SECRET_ACCESS_KEY=… npx tsx examples/s3-buckets.ts
 * Without S3_ENDPOINT it starts an in-process s3rver (a dev dependency) on 127.0.0.1.
 * Other variables: S3_REGION (default us-east-1), S3_OBJECTS (default 300),
 * S3_FORCE_PATH_STYLE (default true when S3_ENDPOINT is set).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { consistentHash } from 'shardwise';
import { createS3Balancer, createS3Client } from 'shardwise/s3';

export interface ExampleOptions {
  /** S3 endpoint URL; when absent an in-process s3rver is started on 127.0.0.1. */
  endpoint?: string;
  region?: string;
  /** Default: the SDK's credential chain for a given endpoint, `S3RVER` for the local server. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Path-style URLs (`endpoint/bucket/key`), needed by most S3-compatible servers. */
  forcePathStyle?: boolean;
  /** The buckets to spread over (default bucket-a, bucket-b, bucket-c). They must exist. */
  buckets?: string[];
  /** Objects to put (default 300). */
  objects?: number;
  /** Where progress lines go (default console.log). */
  log?: (line: string) => void;
}

export interface ExampleSummary {
  /** Puts that succeeded, over both passes. */
  written: number;
  failed: number;
  /** Objects per bucket, as listed at the end. */
  perBucket: Record<string, number>;
  /** Keys found in more than one bucket (strict affinity: 0). */
  duplicates: number;
  /** Keys found in no bucket. */
  missing: number;
  durationMs: number;
}

const PREFIX = 'shardwise-example/';

/** Options from the environment (see the header). */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ExampleOptions {
  const options: ExampleOptions = {};
  if (env.S3_ENDPOINT) options.endpoint = env.S3_ENDPOINT;
  if (env.S3_REGION) options.region = env.S3_REGION;
  if (env.S3_ACCESS_KEY_ID && env.S3_SECRET_ACCESS_KEY) {
    options.credentials = {
      accessKeyId: env.S3_ACCESS_KEY_ID,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY,
    };
  }
  if (env.S3_BUCKETS) options.buckets = env.S3_BUCKETS.split(',').map((b) => b.trim());
  if (env.S3_OBJECTS) options.objects = Number(env.S3_OBJECTS);
  if (env.S3_FORCE_PATH_STYLE) options.forcePathStyle = env.S3_FORCE_PATH_STYLE !== 'false';
  return options;
}

/** The slice of s3rver's API used here (s3rver ships no types). */
interface LocalServer {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type LocalServerClass = new (options: {
  port: number;
  address: string;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string }[];
}) => LocalServer;

/** Starts s3rver on 127.0.0.1 with the buckets; returns its endpoint and a stop function. */
async function startLocalS3(
  buckets: string[],
): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const moduleName = 's3rver';
  const { default: S3rver } = (await import(moduleName)) as { default: LocalServerClass };
  const directory = await mkdtemp(join(tmpdir(), 'shardwise-example-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

export async function main(options: ExampleOptions = optionsFromEnv()): Promise<ExampleSummary> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const log = options.log ?? console.log;
  const buckets = options.buckets ?? ['bucket-a', 'bucket-b', 'bucket-c'];
  const objects = options.objects ?? 300;
  const local = options.endpoint === undefined ? await startLocalS3(buckets) : undefined;
  const endpoint = options.endpoint ?? local!.endpoint;
  const credentials =
    options.credentials ??
    (local === undefined ? undefined : { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });

  // One keep-alive client (connections are reused across puts) shared by the three targets.
  const client = createS3Client({
    endpoint,
    region: options.region ?? 'us-east-1',
    forcePathStyle: options.forcePathStyle ?? true,
    ...(credentials === undefined ? {} : { credentials }),
    // S3-compatible servers (s3rver, older MinIO) mishandle the SDK's default checksum framing.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxSockets: 32,
  });
  const s3 = createS3Balancer({
    targets: buckets.map((bucket) => ({ client, bucket, prefix: PREFIX })),
    picker: consistentHash(), // the object key chooses the bucket, and keeps it
    maxInFlightPerShard: 8,
    maxQueued: 64,
  });

  const started = performance.now();
  let written = 0;
  let failed = 0;
  const pass = async (): Promise<void> => {
    for (let i = 0; i < objects; i++) {
      await s3.ready(); // backpressure: wait while 64 puts are queued
      const record = { id: i, value: Math.round(i * 1.618) }; // the same bytes in both passes
      s3.putObject({
        key: `records/${String(i).padStart(6, '0')}.json`,
        body: JSON.stringify(record),
        contentType: 'application/json',
      }).then(
        () => {
          written++;
        },
        (error: unknown) => {
          failed++;
          log(`put ${i} failed: ${error instanceof Error ? error.message : String(error)}`);
        },
      );
    }
  };
  let perBucket: Record<string, number> = {};
  let duplicates = 0;
  let missing = 0;
  try {
    await Promise.all([pass(), pass()]); // two writers of the same keys, at once
    await s3.drain();
    const listed = await Promise.all(buckets.map((bucket) => listKeys(client, bucket)));
    perBucket = Object.fromEntries(buckets.map((bucket, b) => [bucket, listed[b]!.length]));
    const seen = new Map<string, number>();
    for (const keys of listed) for (const key of keys) seen.set(key, (seen.get(key) ?? 0) + 1);
    for (const n of seen.values()) if (n > 1) duplicates++;
    missing = objects - seen.size;
  } finally {
    await s3.close();
    client.destroy();
    await local?.stop();
  }
  const durationMs = Math.round(performance.now() - started);
  log(`endpoint: ${endpoint}${local === undefined ? '' : ' (in-process s3rver)'}`);
  for (const [bucket, n] of Object.entries(perBucket)) log(`  ${bucket}: ${n} objects`);
  log(`keys in more than one bucket: ${duplicates}, in none: ${missing}`);
  log(
    `written: ${written} (2 passes), failed: ${failed}, lost: ${2 * objects - written - failed}, ${durationMs} ms`,
  );
  return { written, failed, perBucket, duplicates, missing, durationMs };
}

/** Every key under the example's prefix in `bucket`. */
async function listKeys(client: S3Client, bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: PREFIX, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return keys;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (summary) => {
      process.exitCode = summary.failed === 0 && summary.duplicates === 0 ? 0 : 1;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
