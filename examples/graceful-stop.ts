/**
 * Stops an ingestion cleanly on Ctrl-C. SIGINT aborts an `AbortController` whose signal `ingest`
 * watches: no record is read after it, the records already taken settle — written, or reported
 * failed with the abort as the reason — and `ingest` rejects with an `IngestError` whose
 * `summary` is exact. The script prints that summary and exits by itself: code 0, or 1 when a
 * record failed for another reason than the stop. A second Ctrl-C (half a second later or more)
 * stops at once: the calls in flight are aborted, their records reported failed (exit code 1).
 *
 *   npx tsx examples/graceful-stop.ts            # an endless source into 3 local shards
 *   npx tsx examples/graceful-stop.ts http://10.0.0.1:8080 http://10.0.0.2:8080
 *
 * Out of the box, the local shards count the records they receive, and the script checks that
 * they received exactly the records the summary says were written.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { type IngestSummary, isShardwiseError } from 'shardwise';
import { createHttpBalancer } from 'shardwise/http';

interface Reading {
  id: string;
  sensor: string;
  value: number;
}

/** A source with no end, as a queue consumer or a tail of a log is: only a stop ends it. */
async function* readings(): AsyncGenerator<Reading> {
  for (let i = 0; ; i++) {
    yield { id: `reading-${i}`, sensor: `sensor-${i % 20}`, value: Math.sin(i / 100) };
    // Give the event loop a turn now and then, as a source waiting on I/O does: a Ctrl-C is
    // heard on such a turn.
    if (i % 100 === 99) await new Promise((resolve) => setImmediate(resolve));
  }
}

export interface GracefulStopOptions {
  /** Shard origins, e.g. `http://10.0.0.1:8080`. */
  origins: string[];
  /** Stops the ingestion when it aborts (the script aborts it on Ctrl-C). */
  signal: AbortSignal;
  /** Aborts the calls in flight when it aborts (a second Ctrl-C). */
  force?: AbortSignal;
  /** Where progress and the summary go (default stdout). */
  out?: NodeJS.WritableStream;
}

/**
 * Ingests `readings()` in NDJSON batches until `options.signal` aborts; resolves with the final
 * summary and why it ended. Nothing is lost either way: `written + failed` is every record read.
 */
export async function main(
  options: GracefulStopOptions,
): Promise<{ summary: IngestSummary<Reading>; stopped: boolean }> {
  const out = options.out ?? process.stdout;
  const balancer = createHttpBalancer({
    origins: options.origins,
    timeoutMs: 10_000, // a hung shard cannot hold the stop: its call ends with a TimeoutError
  });
  options.force?.addEventListener('abort', () => void balancer.close({ drain: false }), {
    once: true,
  });
  try {
    const summary = await balancer.ingest(readings(), {
      path: '/ingest',
      key: (reading) => reading.sensor,
      batch: { maxRecords: 200, lingerMs: 20 },
      signal: options.signal,
      progressIntervalMs: 500,
      onProgress: (p) => out.write(`${p.written} written, ${p.held} held, ${p.failed} failed\n`),
    });
    return { summary, stopped: false };
  } catch (error) {
    // The stop: the error carries the account of every record read before it.
    if (isShardwiseError(error, 'SHARDWISE_INGEST_STOPPED')) {
      return { summary: error.summary as IngestSummary<Reading>, stopped: true };
    }
    throw error;
  } finally {
    await balancer.close();
  }
}

/** The summary in a few lines. */
export function report(summary: IngestSummary<Reading>, stopped: boolean): string {
  const lines = [
    stopped ? 'stopped: no record read after the stop, every record read settled' : 'done',
    `written: ${summary.written}`,
    `failed: ${summary.failed}`,
    ...Object.entries(summary.perShard).map(([id, n]) => `  ${id}: ${n}`),
  ];
  for (const { record, error } of summary.failures.slice(0, 5)) {
    lines.push(`  ${record.id} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return lines.join('\n');
}

/** Local ingest shards: each counts the NDJSON lines it receives. */
export async function startLocalShards(count: number) {
  const received = Array.from({ length: count }, () => 0);
  const servers = await Promise.all(
    received.map(async (_, i) => {
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          received[i]! += body.split('\n').filter((line) => line !== '').length;
          res.statusCode = 204;
          res.end();
        });
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      return server;
    }),
  );
  return {
    origins: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`),
    received: () => received.reduce((a, b) => a + b, 0),
    close: () =>
      Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      ).then(() => undefined),
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const given = process.argv.slice(2);
  const local = given.length === 0 ? await startLocalShards(3) : undefined;
  const stop = new AbortController();
  const force = new AbortController();
  // `on`, not `once`: with no listener left, a Ctrl-C would end the process at once, the records
  // in flight unsettled. One within half a second of the first is not a second Ctrl-C: `npx tsx`
  // passes a Ctrl-C on again when the script has not acknowledged it within 30 ms.
  let ctrlC = 0;
  let firstAt = 0;
  process.on('SIGINT', () => {
    ctrlC++;
    if (ctrlC === 1) {
      firstAt = performance.now();
      console.log(
        'stopping: no new record is read; the records taken settle (Ctrl-C again to abort them)',
      );
      stop.abort(new Error('stopped by Ctrl-C'));
    } else if (performance.now() - firstAt > 500 && !force.signal.aborted) {
      force.abort(new Error('aborted by a second Ctrl-C'));
    }
  });
  console.log('ingesting an endless source: Ctrl-C to stop');
  try {
    const { summary, stopped } = await main({
      origins: local?.origins ?? given,
      signal: stop.signal,
      force: force.signal,
    });
    console.log(report(summary, stopped));
    if (local !== undefined) {
      const received = local.received();
      console.log(`the local shards received ${received} records (written: ${summary.written})`);
      if (received !== summary.written) process.exitCode = 1;
    }
    // A record failed because of the stop (the one read as it came) is what a stop means; one
    // that failed for another reason — a shard's refusal, a second Ctrl-C — is worth a code.
    if (summary.failures.some(({ error }) => error !== stop.signal.reason)) process.exitCode = 1;
  } finally {
    await local?.close();
  }
}
