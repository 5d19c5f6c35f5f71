import type { S3Client } from '@aws-sdk/client-s3';
import { ConfigError } from '../base/errors.js';
import type { ShardSpec } from '../base/types.js';
import {
  checkKnownKeys,
  checkObject,
  denseArray,
  duration,
  isPlainObject,
  orDefault,
  positiveInt,
} from '../base/validate.js';
import type { BalancerOptions } from '../core/options.js';
import type { CreateS3ClientOptions, S3BalancerOptions, S3Target, S3TargetSpec } from './types.js';

const MiB = 1024 * 1024;

/** The transport's defaults (documented on {@link S3BalancerOptions}). */
export const S3_DEFAULTS = {
  partSizeBytes: 8 * MiB,
  partConcurrency: 4,
  defaultRetryAfterMs: 1_000,
  maxRetryAfterMs: 60_000,
  /** Bound on one attempt, ms, unless `timeoutMs` says otherwise (a trickling target cannot hang a run). */
  timeoutMs: 60_000,
} as const;

/** S3's own limits on multipart uploads. */
export const S3_LIMITS = {
  /** Every part but the last must be at least this large. */
  minPartSizeBytes: 5 * MiB,
  maxPartSizeBytes: 5 * 1024 * MiB,
  maxParts: 10_000,
  minBucketLength: 3,
} as const;

/** Option names the transport adds to the core's (the core rejects every other unknown name). */
export const S3_OPTION_KEYS = [
  'targets',
  'partSizeBytes',
  'partConcurrency',
  'defaultRetryAfterMs',
  'maxRetryAfterMs',
] as const;

const TARGET_KEYS = ['id', 'client', 'bucket', 'prefix', 'weight', 'zone', 'labels'];

export interface ResolvedS3Options {
  partSizeBytes: number;
  partConcurrency: number;
  defaultRetryAfterMs: number;
  maxRetryAfterMs: number;
}

/** Turns a target's client options into a client (the balancer's cache: one per options object). */
export type ClientFor = (options: CreateS3ClientOptions, field: string) => S3Client;

/**
 * Validates the transport's options and turns `targets` into core shard specs. The core's own
 * options are validated by the `Balancer` constructor, which also rejects unknown names (it is
 * given {@link S3_OPTION_KEYS}).
 */
export function resolveS3Options(
  options: S3BalancerOptions,
  clientFor: ClientFor,
): { core: BalancerOptions<S3Target>; s3: ResolvedS3Options } {
  checkObject('options', options);
  const o = options as S3BalancerOptions & { shards?: unknown };
  if (o.shards !== undefined) {
    throw new ConfigError(
      'shards',
      'is not an option of createS3Balancer: list the buckets as `targets: [{ client, bucket }]`',
      o.shards,
    );
  }
  if (!Array.isArray(o.targets) || o.targets.length === 0) {
    throw new ConfigError(
      'targets',
      'must be a non-empty array of { client, bucket, prefix? } targets',
      o.targets,
    );
  }
  const s3: ResolvedS3Options = {
    partSizeBytes: orDefault(o.partSizeBytes, S3_DEFAULTS.partSizeBytes, (v) =>
      checkPartSize('partSizeBytes', v),
    ),
    partConcurrency: orDefault(o.partConcurrency, S3_DEFAULTS.partConcurrency, (v) =>
      positiveInt('partConcurrency', v),
    ),
    defaultRetryAfterMs: orDefault(o.defaultRetryAfterMs, S3_DEFAULTS.defaultRetryAfterMs, (v) =>
      duration('defaultRetryAfterMs', v),
    ),
    maxRetryAfterMs: orDefault(o.maxRetryAfterMs, S3_DEFAULTS.maxRetryAfterMs, (v) =>
      duration('maxRetryAfterMs', v),
    ),
  };
  const shards = denseArray('targets', o.targets, '{ client, bucket, prefix? } targets').map(
    (spec, i) => toShardSpec(`targets[${i}]`, spec, clientFor),
  );
  checkUniqueIds('targets', shards);
  const { targets: _targets, ...rest } = o;
  const core: BalancerOptions<S3Target> = { ...rest, shards };
  if (core.timeoutMs === undefined) core.timeoutMs = S3_DEFAULTS.timeoutMs;
  return { core, s3 };
}

/** Rejects a repeated id, naming both places (ids default to the bucket). */
export function checkUniqueIds(field: string, shards: readonly ShardSpec<S3Target>[]): void {
  const seen = new Map<string, number>();
  shards.forEach((spec, i) => {
    const first = seen.get(spec.id);
    if (first !== undefined) {
      throw new ConfigError(
        `${field}[${i}].id`,
        `must be unique, and ${field}[${first}] has it too (ids default to the bucket, or bucket/prefix: give targets on the same bucket an explicit id)`,
        spec.id,
      );
    }
    seen.set(spec.id, i);
  });
}

/** Checks a part size against S3's limits. */
export function checkPartSize(field: string, value: unknown): number {
  const size = positiveInt(field, value);
  if (size < S3_LIMITS.minPartSizeBytes || size > S3_LIMITS.maxPartSizeBytes) {
    throw new ConfigError(
      field,
      `must be from 5 MiB (${S3_LIMITS.minPartSizeBytes}, the S3 minimum for every part but the last) to 5 GiB`,
      value,
    );
  }
  return size;
}

/** True for an `S3Client` (or anything that sends commands like one). */
export function isClient(value: unknown): value is S3Client {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { send?: unknown }).send === 'function'
  );
}

/**
 * A core shard spec from an S3 target spec (`{ client, bucket, prefix? }`) or from a core spec
 * whose `target` is an `S3Target` (as `addShard`/`setShards` may be given).
 */
export function toShardSpec(
  field: string,
  spec: unknown,
  clientFor: ClientFor,
): ShardSpec<S3Target> {
  checkObject(field, spec);
  if ('target' in spec) {
    checkKnownKeys(field, spec, ['id', 'target', 'weight', 'zone', 'labels']);
    const core = spec as ShardSpec<unknown>;
    checkObject(`${field}.target`, core.target);
    checkKnownKeys(`${field}.target`, core.target, ['client', 'bucket', 'prefix']);
    const target = toTarget(`${field}.target`, core.target as S3TargetSpec, clientFor);
    return withShardFields({ id: core.id ?? defaultId(target), target }, core);
  }
  checkKnownKeys(field, spec, TARGET_KEYS);
  const s = spec as S3TargetSpec;
  const target = toTarget(field, s, clientFor);
  if (s.id !== undefined && (typeof s.id !== 'string' || s.id === '')) {
    throw new ConfigError(`${field}.id`, 'must be a non-empty string', s.id);
  }
  return withShardFields({ id: s.id ?? defaultId(target), target }, s);
}

function withShardFields(
  out: ShardSpec<S3Target>,
  from: {
    weight?: number | undefined;
    zone?: string | undefined;
    labels?: Record<string, string> | undefined;
  },
): ShardSpec<S3Target> {
  if (from.weight !== undefined) out.weight = from.weight;
  if (from.zone !== undefined) out.zone = from.zone;
  if (from.labels !== undefined) out.labels = from.labels;
  return out;
}

function defaultId(target: S3Target): string {
  return target.prefix === '' ? target.bucket : `${target.bucket}/${target.prefix}`;
}

/** A frozen {@link S3Target} from `{ client, bucket, prefix? }`. */
function toTarget(
  field: string,
  spec: Pick<S3TargetSpec, 'client' | 'bucket' | 'prefix'>,
  clientFor: ClientFor,
): S3Target {
  let client: S3Client;
  if (isClient(spec.client)) client = spec.client;
  else if (isPlainObject(spec.client)) {
    client = clientFor(spec.client, `${field}.client`);
  } else {
    // Described by its type only: a misplaced credential (`client: 'AKID:secret'`) is not echoed.
    throw new ConfigError(
      `${field}.client`,
      `${spec.client === undefined ? 'is required' : 'must be'}: an S3Client, or createS3Client() options as a plain object (endpoint, region, credentials …)`,
      spec.client,
      { given: spec.client !== undefined, secret: true },
    );
  }
  const bucket = checkBucket(`${field}.bucket`, spec.bucket);
  let prefix = '';
  if (spec.prefix !== undefined) {
    if (typeof spec.prefix !== 'string') {
      throw new ConfigError(`${field}.prefix`, 'must be a string', spec.prefix);
    }
    prefix = checkKeyPath(`${field}.prefix`, spec.prefix);
  }
  return Object.freeze({ client, bucket, prefix });
}

/** A `.` or `..` segment of a key's path (`a/../b`, `../x`, `./x`, `x/..`). */
const DOT_SEGMENT = /(^|\/)\.\.?(\/|$)/;

/**
 * A key or prefix without `.` or `..` path segments: a server or proxy that normalises the path
 * would store `tenant-1/../../bucket-b/x` in another bucket than the target's (S3 itself keeps
 * such keys literally, and AWS advises against them). Returns it.
 */
export function checkKeyPath(field: string, key: string): string {
  if (DOT_SEGMENT.test(key)) {
    throw new ConfigError(
      field,
      'must not hold a "." or ".." path segment: a server that normalises paths would store it outside the target',
      key,
    );
  }
  return key;
}

function checkBucket(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length < S3_LIMITS.minBucketLength) {
    throw new ConfigError(
      field,
      value === undefined
        ? 'is required: the bucket name (at least 3 characters)'
        : 'must be a bucket name of at least 3 characters',
      value,
      { given: value !== undefined },
    );
  }
  if (/[/\s]/.test(value)) {
    throw new ConfigError(
      field,
      'must be a bare bucket name, without "/" or spaces (put key prefixes in `prefix`)',
      value,
    );
  }
  return value;
}

const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;
const PRINTABLE_ASCII = /^[\t\x20-\x7e]*$/;

/**
 * User metadata travels as `x-amz-meta-<name>` headers: a name must be an HTTP token and a value
 * printable ASCII. Anything else fails in Node's HTTP client before a byte is sent — the caller's
 * mistake, refused here rather than retried on every target and charged to their health.
 */
export function checkMetadata(field: string, metadata: unknown): void {
  checkObject(field, metadata);
  for (const [name, value] of Object.entries(metadata)) {
    if (!HEADER_TOKEN.test(name)) {
      throw new ConfigError(
        field,
        'has a name that is not an HTTP token (it is sent as a header)',
        name,
      );
    }
    checkHeaderText(`${field}.${name}`, value);
  }
}

/**
 * A value S3 sends as a header (metadata, `contentType`): printable ASCII, or Node's HTTP client
 * fails it before a byte is sent — the caller's mistake, refused here rather than retried on
 * every target and charged to their health. Never quoted: a header may hold a secret.
 */
export function checkHeaderText(field: string, value: unknown): string {
  if (typeof value !== 'string') {
    throw new ConfigError(field, 'must be a string', value, { secret: true });
  }
  if (!PRINTABLE_ASCII.test(value)) {
    throw new ConfigError(
      field,
      'must be printable ASCII (it is sent as an HTTP header; encode other text, e.g. with encodeURIComponent)',
      value,
      { secret: true },
    );
  }
  return value;
}
