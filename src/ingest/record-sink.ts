/**
 * One record per run: `send(shard, record, ctx)` through `balancer.run`, with the record's key
 * and bytes; the balancer's queue is the backpressure (`ready()` before the next record). A
 * record ends written, failed, or uncertain when a send of it went out and no answer came.
 */
import { UncertainWriteError } from '../base/errors.js';
import type { Ledger } from './ledger.js';
import { readFailure } from './outcome.js';
import type { Sink } from './sink.js';
import type { RunnerLike, SendFn } from './types.js';

export interface RecordSinkOptions<T, Rec> {
  send: SendFn<T, Rec>;
  key: ((record: Rec) => unknown) | undefined;
  bytes: ((record: Rec) => number) | undefined;
  idempotent: boolean;
  /** The ingestion's own `deliveryTimeoutMs`; undefined: the balancer's. */
  deliveryTimeoutMs: number | undefined;
}

export class RecordSink<T, Rec> implements Sink<Rec> {
  readonly #runner: RunnerLike<T>;
  readonly #ledger: Ledger<Rec>;
  readonly #options: RecordSinkOptions<T, Rec>;

  constructor(runner: RunnerLike<T>, ledger: Ledger<Rec>, options: RecordSinkOptions<T, Rec>) {
    this.#runner = runner;
    this.#ledger = ledger;
    this.#options = options;
    ledger.startHeartbeat();
  }

  add(record: Rec, seq: number): void {
    const ledger = this.#ledger;
    const o = this.#options;
    let key: unknown;
    let bytes = 0;
    try {
      key = o.key?.(record);
      if (o.bytes !== undefined) bytes = o.bytes(record);
    } catch (error) {
      // A key or size that cannot be computed fails this record only: the ingestion goes on.
      ledger.fail(record, error, 0, seq);
      return;
    }
    // An invalid key or size makes `run` reject with a ConfigError naming it: the record fails.
    const counted = Number.isInteger(bytes) && bytes >= 0 ? bytes : 0;
    ledger.holdBytes(counted);
    const send = o.send;
    // The shard of a send that went out and got no answer: the record may be stored there.
    let uncertainOn: string | undefined;
    const options =
      o.deliveryTimeoutMs === undefined
        ? { key: key as never, bytes, idempotent: o.idempotent }
        : {
            key: key as never,
            bytes,
            idempotent: o.idempotent,
            deliveryTimeoutMs: o.deliveryTimeoutMs,
          };
    this.#runner
      .run((shard, ctx) => {
        if (ctx.attempt > 1) {
          ledger.retried(1);
          if (uncertainOn !== undefined) ledger.resent(1);
        }
        const noteUncertain = (error: unknown) => {
          if (readFailure(error) === 'uncertain') uncertainOn = shard.id;
        };
        const unlisten = ctx.onAbort(noteUncertain);
        return send(shard, record, ctx).then(
          () => {
            unlisten();
            return shard.id;
          },
          (error: unknown) => {
            unlisten();
            noteUncertain(error);
            throw error;
          },
        );
      }, options)
      .then(
        (shardId) => {
          ledger.mark(seq);
          ledger.wrote(1, counted, shardId);
        },
        (error: unknown) => {
          if (uncertainOn === undefined) ledger.fail(record, error, counted, seq);
          else ledger.uncertain(record, new UncertainWriteError(uncertainOn, error), counted, seq);
        },
      );
  }

  wait(): Promise<void> {
    return this.#runner.ready();
  }

  end(): void {}
}
