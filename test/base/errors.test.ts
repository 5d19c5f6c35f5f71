import { describe, expect, it } from 'vitest';
import {
  BalancerClosedError,
  CheckpointError,
  ConfigError,
  DeadLetterError,
  IngestError,
  isShardwiseError,
  MissingKeyError,
  NoShardAvailableError,
  PickerError,
  PushBackError,
  QueueFullError,
  RetriesExhaustedError,
  ShardRemovedError,
  ShardUnavailableError,
  type ShardwiseErrorCode,
  SourceError,
  TimeoutError,
  WriteFailedError,
} from '../../src/index.js';

const EMPTY_SUMMARY = {
  written: 0,
  failed: 0,
  uncertain: 0,
  resent: 0,
  failures: [],
  errors: [],
  bytes: 0,
  retries: 0,
  durationMs: 0,
  perShard: {},
  batches: 0,
  transit: { raw: 0, wire: 0, received: 0 },
};

type AnyClass = abstract new (...args: never[]) => Error;

const CASES: [string, ShardwiseErrorCode, AnyClass, () => Error, AnyClass][] = [
  [
    'ConfigError',
    'SHARDWISE_CONFIG',
    ConfigError,
    () => new ConfigError('x', 'must be y', 1),
    TypeError,
  ],
  [
    'NoShardAvailableError',
    'SHARDWISE_NO_SHARD',
    NoShardAvailableError,
    () => new NoShardAvailableError('none'),
    Error,
  ],
  ['QueueFullError', 'SHARDWISE_QUEUE_FULL', QueueFullError, () => new QueueFullError(10), Error],
  ['TimeoutError', 'SHARDWISE_TIMEOUT', TimeoutError, () => new TimeoutError(100, 'a'), Error],
  [
    'RetriesExhaustedError',
    'SHARDWISE_RETRIES_EXHAUSTED',
    RetriesExhaustedError,
    () => new RetriesExhaustedError([{ shardId: 'a', error: new Error('x'), elapsedMs: 1 }], 'why'),
    Error,
  ],
  [
    'BalancerClosedError',
    'SHARDWISE_CLOSED',
    BalancerClosedError,
    () => new BalancerClosedError(),
    Error,
  ],
  [
    'MissingKeyError',
    'SHARDWISE_MISSING_KEY',
    MissingKeyError,
    () => new MissingKeyError('ring'),
    TypeError,
  ],
  ['PickerError', 'SHARDWISE_PICKER', PickerError, () => new PickerError('bad'), Error],
  ['PushBackError', 'SHARDWISE_PUSH_BACK', PushBackError, () => new PushBackError(250), Error],
  [
    'ShardRemovedError',
    'SHARDWISE_SHARD_REMOVED',
    ShardRemovedError,
    () => new ShardRemovedError('a'),
    Error,
  ],
  [
    'ShardUnavailableError',
    'SHARDWISE_SHARD_UNAVAILABLE',
    ShardUnavailableError,
    () => new ShardUnavailableError('a', 100, 'ejected'),
    Error,
  ],
  [
    'WriteFailedError',
    'SHARDWISE_WRITE_FAILED',
    WriteFailedError,
    () => new WriteFailedError({ id: 1 }, new Error('refused')),
    Error,
  ],
  [
    'IngestError',
    'SHARDWISE_INGEST_STOPPED',
    IngestError,
    () => new IngestError('aborted', new Error('stop'), EMPTY_SUMMARY),
    Error,
  ],
  [
    'SourceError',
    'SHARDWISE_SOURCE',
    SourceError,
    () => new SourceError('data.jsonl', 12, 'not valid JSON'),
    Error,
  ],
  [
    'CheckpointError',
    'SHARDWISE_CHECKPOINT',
    CheckpointError,
    () => new CheckpointError('load.ckpt', 'checkpoint load.ckpt is corrupt: not JSON'),
    Error,
  ],
  [
    'DeadLetterError',
    'SHARDWISE_DEAD_LETTER',
    DeadLetterError,
    () => new DeadLetterError('failed.ndjson', 'could not be written', new Error('ENOSPC')),
    Error,
  ],
];

describe.each(CASES)('%s', (name, code, Class, create, Base) => {
  it('has its stable code and name, and is an Error of the right base', () => {
    const error = create();
    expect(error.name).toBe(name);
    expect((error as Error & { code: string }).code).toBe(code);
    expect(error).toBeInstanceOf(Class);
    expect(error).toBeInstanceOf(Base);
    expect(error).toBeInstanceOf(Error);
    expect(error.message.length).toBeGreaterThan(0);
    expect(String(error)).toBe(`${name}: ${error.message}`);
    expect(typeof error.stack).toBe('string');
  });

  it('is recognised by isShardwiseError, with and without its code', () => {
    const error = create();
    expect(isShardwiseError(error)).toBe(true);
    expect(isShardwiseError(error, code)).toBe(true);
    const other: ShardwiseErrorCode =
      code === 'SHARDWISE_CONFIG' ? 'SHARDWISE_TIMEOUT' : 'SHARDWISE_CONFIG';
    expect(isShardwiseError(error, other)).toBe(false);
  });

  it('is not an instance of the other classes', () => {
    const error = create();
    for (const [otherName, , OtherClass] of CASES) {
      if (otherName !== name) expect(error instanceof OtherClass).toBe(false);
    }
  });

  it('survives a second copy of the package: a bare branded object passes instanceof', () => {
    const foreign = Object.create(null);
    foreign[Symbol.for('shardwise.error')] = code;
    expect(foreign instanceof Class).toBe(true);
    expect(isShardwiseError(foreign)).toBe(true);
    expect(isShardwiseError(foreign, code)).toBe(true);
    // the brand must carry this class's code
    const wrong = Object.create(null);
    wrong[Symbol.for('shardwise.error')] = 'SHARDWISE_SOMETHING_ELSE';
    expect(wrong instanceof Class).toBe(false);
  });

  it('the code cannot be overwritten', () => {
    const error = create() as Error & { code: string };
    expect(() => {
      (error as { code: string }).code = 'NOPE';
    }).toThrow(TypeError);
    expect(error.code).toBe(code);
  });
});

describe('isShardwiseError', () => {
  it.each([
    ['a plain Error', new Error('x')],
    ['a TypeError', new TypeError('x')],
    [
      'an error with a look-alike code',
      Object.assign(new Error('x'), { code: 'SHARDWISE_CONFIG' }),
    ],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'SHARDWISE_CONFIG'],
    ['a number', 42],
    ['a plain object', { code: 'SHARDWISE_TIMEOUT' }],
    ['a non-string brand', { [Symbol.for('shardwise.error')]: 1 }],
  ])('is false for %s', (_name, value) => {
    expect(isShardwiseError(value)).toBe(false);
    expect(isShardwiseError(value, 'SHARDWISE_CONFIG')).toBe(false);
  });

  it('a plain object with the brand is recognised (a copy of the package in another realm)', () => {
    const branded = { [Symbol.for('shardwise.error')]: 'SHARDWISE_CLOSED', message: 'closed' };
    expect(isShardwiseError(branded)).toBe(true);
    expect(isShardwiseError(branded, 'SHARDWISE_CLOSED')).toBe(true);
    expect(branded instanceof BalancerClosedError).toBe(true);
  });
});

describe('payloads', () => {
  it('ConfigError keeps the field and the value, and formats the message', () => {
    const error = new ConfigError('retry.attempts', 'must be a positive integer', 0);
    expect(error.field).toBe('retry.attempts');
    expect(error.value).toBe(0);
    expect(error.message).toBe('`retry.attempts` must be a positive integer, got 0 (number)');
    expect(new ConfigError('x', 'is required', undefined, { given: false }).message).toBe(
      '`x` is required',
    );
  });

  it('ConfigError describes values of every kind', () => {
    const describe_ = (value: unknown) => new ConfigError('f', 'must be z', value).message;
    expect(describe_('s')).toBe('`f` must be z, got "s" (string)');
    expect(describe_(true)).toBe('`f` must be z, got true (boolean)');
    expect(describe_(10n)).toBe('`f` must be z, got 10 (bigint)');
    expect(describe_(null)).toBe('`f` must be z, got null');
    expect(describe_(() => 1)).toBe('`f` must be z, got a function');
    expect(describe_([1, 2])).toBe('`f` must be z, got an array of length 2');
    expect(describe_(new Uint8Array(3))).toBe('`f` must be z, got a Uint8Array of length 3');
    expect(describe_(new Map())).toBe('`f` must be z, got an object (Map)');
  });

  it('QueueFullError, TimeoutError, PushBackError and ShardRemovedError carry their figures', () => {
    expect(new QueueFullError(7).maxQueued).toBe(7);
    expect(new QueueFullError(7).message).toContain('maxQueued 7');
    const timeout = new TimeoutError(250, 'b');
    expect(timeout.timeoutMs).toBe(250);
    expect(timeout.shardId).toBe('b');
    expect(timeout.message).toBe('attempt timed out after 250 ms on shard "b"');
    expect(new TimeoutError(5).message).toBe('attempt timed out after 5 ms');
    const cause = new Error('429');
    const pushBack = new PushBackError(1_500, undefined, { cause });
    expect(pushBack.retryAfterMs).toBe(1_500);
    expect(pushBack.cause).toBe(cause);
    expect(pushBack.message).toBe('the shard pushed back: retry after 1500 ms');
    expect(new ShardRemovedError('z').shardId).toBe('z');
  });

  it('RetriesExhaustedError lists the attempts and takes the last error as cause', () => {
    const e1 = new Error('first');
    const e2 = new Error('second');
    const attempts = [
      { shardId: 'a', error: e1, elapsedMs: 10 },
      { shardId: 'b', error: e2, elapsedMs: 25 },
    ];
    const error = new RetriesExhaustedError(attempts, 'all 2 attempts failed');
    expect(error.attempts).toEqual(attempts);
    expect(error.cause).toBe(e2);
    expect(error.message).toBe(
      'run failed after 2 attempts (all 2 attempts failed); last error on shard "b": second',
    );
  });

  it('PickerError keeps its cause', () => {
    const cause = new RangeError('oops');
    expect(new PickerError('picker "x" threw', { cause }).cause).toBe(cause);
  });
});
