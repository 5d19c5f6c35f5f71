/**
 * One producer of the fleet bench and test, in its own process: on each `run` message it builds
 * an HTTP balancer over the shards with the named picker, and `workers` closed-loop callers send
 * requests from `startNs` until `untilNs` or until `count` were sent. It answers with what it
 * counted and each request's end time and latency (ms after `startNs`).
 *
 * IPC in: { type: 'run', origins, picker, workers, startNs, untilNs, count?, blackoutMs }.
 * IPC out: { type: 'ready' }, { type: 'done', sent, ok, failed, ends, latencies, errors }.
 */
import { createHttpBalancer } from '../../src/http/index.js';
import { type Picker, p2c, peakEwma, roundRobin, weightedByLoadReport } from '../../src/index.js';

export type PickerName = 'roundRobin' | 'p2c' | 'peakEwma' | 'weightedByLoadReport';

export interface RunMessage {
  type: 'run';
  origins: string[];
  picker: PickerName;
  workers: number;
  /** process.hrtime.bigint() values, as strings (the monotonic clock all processes share). */
  startNs: string;
  untilNs: string;
  /** Stop after this many requests in all (the test); the bench runs until `untilNs`. */
  count?: number;
  blackoutMs: number;
}

export interface DoneMessage {
  type: 'done';
  sent: number;
  ok: number;
  failed: number;
  /** End time of each successful request, ms after `startNs`. */
  ends: number[];
  latencies: number[];
  /** Up to 5 error messages, for a report. */
  errors: string[];
}

function pickerOf(name: PickerName, blackoutMs: number): Picker {
  if (name === 'roundRobin') return roundRobin();
  if (name === 'p2c') return p2c();
  if (name === 'peakEwma') return peakEwma();
  return weightedByLoadReport({ blackoutMs });
}

async function run(message: RunMessage): Promise<DoneMessage> {
  const http = createHttpBalancer({
    origins: message.origins,
    picker: pickerOf(message.picker, message.blackoutMs),
    connectionsPerShard: 8,
    timeoutMs: 10_000,
  });
  const start = BigInt(message.startNs);
  const until = BigInt(message.untilNs);
  const limit = message.count ?? Number.POSITIVE_INFINITY;
  const done: DoneMessage = {
    type: 'done',
    sent: 0,
    ok: 0,
    failed: 0,
    ends: [],
    latencies: [],
    errors: [],
  };
  const wait = Number(start - process.hrtime.bigint()) / 1e6;
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const worker = async () => {
    while (done.sent < limit && process.hrtime.bigint() < until) {
      done.sent++;
      const t = process.hrtime.bigint();
      try {
        await http.request({ path: '/', idempotent: true });
        const end = process.hrtime.bigint();
        done.ok++;
        done.ends.push(Number(end - start) / 1e6);
        done.latencies.push(Number(end - t) / 1e6);
      } catch (error) {
        done.failed++;
        if (done.errors.length < 5) done.errors.push(String((error as Error)?.message ?? error));
      }
    }
  };
  await Promise.all(Array.from({ length: message.workers }, worker));
  await http.close();
  return done;
}

process.on('message', (message: RunMessage) => {
  if (message.type === 'run') void run(message).then((result) => process.send?.(result));
});
process.on('disconnect', () => process.exit(0));
process.send?.({ type: 'ready' });
