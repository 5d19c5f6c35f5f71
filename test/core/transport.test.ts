/**
 * The Transport contract (src/transport.ts) through its own interface: a tiny transport of our
 * own, composed with a plain `Balancer` — its option names accepted (and no others), its figures
 * added to `stats()`, its release called once after close, its batch call used by `ingest()` and
 * `createWriteStream()` when their options carry no `send`, its calls run through the host — and
 * the balancer's `onClose()` that such owners (an ingestion, a DNS watch) listen to.
 */

import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import {
  callThrough,
  composedName,
  type Transport,
  type TransportCall,
  type TransportHost,
  withCalls,
} from '../../src/core/transport.js';
import {
  Balancer,
  type BalancerOptions,
  type BalancerStats,
  ConfigError,
  roundRobin,
  type ShardState,
} from '../../src/index.js';
import { BATCH_DEFAULTS, COMMON_KEYS } from '../../src/ingest/options.js';
import { batchPlan, readRecordOptions } from '../../src/ingest/transport-plan.js';
import type { RunnerLike } from '../../src/ingest/types.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, outcome } from '../helpers.js';

/** A batch the echo transport sent: the shard, the records, the body. */
interface Sent {
  shard: string;
  records: unknown[];
  body: string;
}

/**
 * A transport of string targets: one option of its own (`greeting`), a batch call that records
 * each batch it sends, a figure (`echoed`) added to the snapshot, a count of its releases, and
 * one call of its own (`say`), run through the host it is given.
 */
class EchoTransport implements Transport<string> {
  readonly knownOptions = ['greeting'];
  readonly sent: Sent[] = [];
  readonly events: string[] = [];
  releases = 0;
  host: TransportHost<string> | undefined;
  readonly hooks = {
    added: (shards: readonly ShardState<string>[]) => {
      for (const s of shards) this.events.push(`added ${s.id}`);
    },
    closed: () => {
      this.events.push('closed');
    },
  };
  readonly batch = {
    name: 'echo',
    plan: <Rec>(
      runner: RunnerLike<string>,
      field: string,
      options: unknown,
      extra: readonly string[],
    ) => {
      this.events.push(`plan ${field}`);
      const read = readRecordOptions<Rec>(
        field,
        options,
        ['encode', 'batch', ...COMMON_KEYS, ...extra],
        BATCH_DEFAULTS,
      );
      return batchPlan<string, Rec>(runner, field, read, () => async (shard, batch) => {
        this.sent.push({
          shard: shard.id,
          records: [...batch.records],
          body: Buffer.from(batch.body()).toString('utf8'),
        });
        return undefined;
      });
    },
  };
  readonly #say: TransportCall<string, string, string, string> = {
    prepare: (text) => {
      if (typeof text !== 'string') throw new ConfigError('text', 'must be a string', text);
      return { job: text.toUpperCase(), run: { idempotent: true } };
    },
    attempt: async (shard, _ctx, job) => `${shard.target}: ${job}`,
  };

  attach(host: TransportHost<string>): void {
    this.events.push('attach');
    this.host = host;
  }

  stats(base: BalancerStats, shards: readonly ShardState<string>[]): BalancerStats {
    return Object.assign({}, base, {
      echoed: this.sent.length,
      order: shards.map((s) => s.id),
    });
  }

  release(drain: boolean): void {
    this.releases += 1;
    this.events.push(`release drain=${drain}`);
  }

  say(text: string): Promise<string> {
    return callThrough(this.host!, this.#say, text);
  }
}

function echoBalancer(
  options: Partial<BalancerOptions<string>> & { greeting?: string } = {},
  transport = new EchoTransport(),
): { balancer: Balancer<string>; transport: EchoTransport; clock: ManualClock } {
  const clock = new ManualClock();
  const balancer = new Balancer<string>(
    {
      shards: [
        { id: 'a', target: 't-a' },
        { id: 'b', target: 't-b' },
      ],
      picker: roundRobin(),
      clock,
      random: seededRandom(1),
      ...options,
    } as BalancerOptions<string>,
    transport,
  );
  return { balancer, transport, clock };
}

describe('Transport: the options it adds', () => {
  it('accepts the transport’s option names, and only with that transport', async () => {
    const { balancer } = echoBalancer({ greeting: 'hi' });
    await balancer.close();
    const without = () =>
      new Balancer({
        shards: [{ id: 'a', target: 't-a' }],
        greeting: 'hi',
      } as BalancerOptions<string>);
    expect(without).toThrow(ConfigError);
    expect(without).toThrow(/^`greeting` is not a known option/);
  });

  it('still rejects a name neither the core nor the transport knows, listing the transport’s', () => {
    let error: unknown;
    try {
      echoBalancer({ greting: 'hi' } as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(
      /^`greting` is not a known option \(known: .*\bgreeting\b/,
    );
  });
});

describe('Transport: hooks, attach, stats', () => {
  it('follows the membership through its hooks and is attached once the balancer is built', async () => {
    const { balancer, transport } = echoBalancer();
    expect(transport.events).toEqual(['added a', 'added b', 'attach']);
    await balancer.addShard({ id: 'c', target: 't-c' });
    expect(transport.events.at(-1)).toBe('added c');
    await balancer.close();
  });

  it('adds its figures to stats(), given the shards in membership order', async () => {
    const { balancer } = echoBalancer();
    await balancer.run(async () => 1);
    const stats = balancer.stats() as BalancerStats & { echoed: number; order: string[] };
    expect(stats.echoed).toBe(0);
    expect(stats.order).toEqual(['a', 'b']);
    expect(stats.shards.map((s) => s.id)).toEqual(['a', 'b']);
    expect(stats.completed).toBe(1);
    await balancer.close();
  });
});

describe('Transport: release', () => {
  it('is called once, after close() settled every run and the membership’s closed hook', async () => {
    const { balancer, transport } = echoBalancer();
    let finish!: () => void;
    const running = balancer.run(() => new Promise<string>((r) => (finish = () => r('done'))));
    await flush();
    const closing = balancer.close();
    const again = balancer.close();
    await flush();
    expect(transport.releases).toBe(0);
    finish();
    await Promise.all([running, closing, again]);
    await balancer.close();
    expect(transport.releases).toBe(1);
    expect(transport.events.slice(-2)).toEqual(['closed', 'release drain=true']);
  });

  it('is told when close() does not drain', async () => {
    const { balancer, transport } = echoBalancer();
    await balancer.close({ drain: false });
    expect(transport.events.at(-1)).toBe('release drain=false');
    expect(transport.releases).toBe(1);
  });
});

describe('Transport: the batch call', () => {
  it('sends ingest()’s records through the transport’s batches when the options carry no send', async () => {
    const { balancer, transport } = echoBalancer();
    const summary = await balancer.ingest([1, 2, 3], { batch: { maxRecords: 2 } } as never);
    expect(summary.written).toBe(3);
    expect(summary.failed).toBe(0);
    expect(transport.events).toContain('plan echo.ingest');
    expect(transport.sent.map((s) => s.records)).toEqual([[1, 2], [3]]);
    expect(transport.sent.map((s) => s.body)).toEqual(['1\n2\n', '3\n']);
    expect((balancer.stats() as BalancerStats & { echoed: number }).echoed).toBe(2);
    await balancer.close();
  });

  it('is not used when the options carry a send (the core ingestion)', async () => {
    const { balancer, transport } = echoBalancer();
    const seen: number[] = [];
    const summary = await balancer.ingest([1, 2], {
      send: async (_shard: ShardState<string>, record: number) => {
        seen.push(record);
      },
    });
    expect(summary.written).toBe(2);
    expect(seen).toEqual([1, 2]);
    expect(transport.sent).toEqual([]);
    expect(transport.events.some((e) => e.startsWith('plan'))).toBe(false);
    await balancer.close();
  });

  it('names its options under its own name: a bad one rejects ingest() before a record is read', async () => {
    const { balancer, transport } = echoBalancer();
    let read = 0;
    const source = (function* () {
      read += 1;
      yield 1;
    })();
    const error = await outcome(balancer.ingest(source, { bogus: 1 } as never));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/^`echo\.ingest\.bogus` is not a known option/);
    expect(read).toBe(0);
    expect(transport.sent).toEqual([]);
    await balancer.close();
  });

  it('backs createWriteStream() too', async () => {
    const { balancer, transport } = echoBalancer();
    await pipeline(
      Readable.from(['x', 'y']),
      balancer.createWriteStream({ batch: { maxRecords: 10 } } as never),
    );
    expect(transport.events).toContain('plan echo.createWriteStream');
    expect(transport.sent.flatMap((s) => s.records)).toEqual(['x', 'y']);
    await balancer.close();
  });
});

describe('Transport: its own calls, through the host', () => {
  it('runs a call on the shard the balancer picks, and refuses a bad request without a run', async () => {
    const { balancer, transport } = echoBalancer();
    expect(await transport.say('hi')).toBe('t-a: HI');
    expect(await transport.say('yo')).toBe('t-b: YO');
    const refused = await outcome(transport.say(42 as never));
    expect(refused).toBeInstanceOf(ConfigError);
    const stats = balancer.stats();
    expect(stats.completed).toBe(2);
    expect(stats.refused).toBe(1);
    await balancer.close();
  });

  it('composes: withCalls keeps the Balancer and adds the calls; composedName brands what it built', async () => {
    const { Name, build } = composedName('EchoBalancer', () => {
      const { balancer, transport } = echoBalancer();
      return withCalls(balancer, { say: (text: string) => transport.say(text) });
    });
    const echo = build(undefined);
    const named = new Name(undefined);
    const plain = echoBalancer().balancer;
    expect(echo).toBeInstanceOf(Balancer);
    expect(echo).toBeInstanceOf(Name);
    expect(named).toBeInstanceOf(Name);
    expect(plain).not.toBeInstanceOf(Name);
    expect(Object.keys(echo)).not.toContain('say');
    expect(await echo.say('hi')).toBe('t-a: HI');
    expect(() => (Name as unknown as (o: undefined) => unknown)(undefined)).toThrow(TypeError);
    await Promise.all([echo.close(), named.close(), plain.close()]);
  });
});

describe('Balancer.onClose', () => {
  it('calls its listener once, at close() (before the runs settle), never again', async () => {
    const { balancer } = echoBalancer();
    const calls: string[] = [];
    balancer.onClose(() => calls.push('first'));
    let finish!: () => void;
    const running = balancer.run(() => new Promise<void>((r) => (finish = r)));
    await flush();
    const closing = balancer.close();
    expect(calls).toEqual(['first']);
    finish();
    await Promise.all([running, closing]);
    await balancer.close();
    expect(calls).toEqual(['first']);
  });

  it('calls a listener added after close() at once, and none that stopped listening', async () => {
    const { balancer } = echoBalancer();
    const calls: string[] = [];
    const stop = balancer.onClose(() => calls.push('stopped'));
    stop();
    await balancer.close();
    balancer.onClose(() => calls.push('late'));
    expect(calls).toEqual(['late']);
  });

  it('refuses a listener that is not a function, naming it', async () => {
    const { balancer } = echoBalancer();
    expect(() => balancer.onClose(42 as never)).toThrow(ConfigError);
    expect(() => balancer.onClose(42 as never)).toThrow(/^`listener` must be a function/);
    await balancer.close();
  });

  it('stops an ingestion waiting on its source when the balancer closes', async () => {
    const { balancer } = echoBalancer();
    let wake!: () => void;
    async function* source() {
      yield 1;
      await new Promise<void>((r) => (wake = r));
      yield 2;
    }
    const ingesting = balancer.ingest(source(), { send: async () => {} });
    await flush();
    await balancer.close();
    const error = await outcome(ingesting);
    wake();
    expect(error).toBeInstanceOf(Error);
    expect((error as { summary?: { written: number } }).summary?.written).toBe(1);
  });
});
