/**
 * The peer the ingestion benchmarks measure against: what a careful user writes by hand with
 * undici — records joined as NDJSON in batches, round robin over one Pool per shard, a bounded
 * number of requests in flight. `body` turns a batch's text into what is sent (gzipped, for one).
 */
import type { Pool } from 'undici';

export interface HandWrittenLoad {
  written: number;
  /** Body bytes before `body`, and as sent. */
  raw: number;
  wire: number;
}

export async function handWrittenLoad(
  pools: readonly Pool[],
  rows: Iterable<unknown>,
  o: {
    batch: number;
    inFlight: number;
    headers: Record<string, string>;
    body?: (text: string) => string | Buffer;
  },
): Promise<HandWrittenLoad> {
  let next = 0;
  let inFlight = 0;
  const load: HandWrittenLoad = { written: 0, raw: 0, wire: 0 };
  let failure: unknown;
  let wake: (() => void) | undefined;
  const post = async (body: string | Buffer, count: number) => {
    const pool = pools[next]!;
    next = next + 1 === pools.length ? 0 : next + 1;
    const res = await pool.request({ method: 'POST', path: '/ingest', headers: o.headers, body });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
    load.written += count;
  };
  const send = (batch: string[]) => {
    const text = `${batch.join('\n')}\n`;
    const body = o.body === undefined ? text : o.body(text);
    load.raw += Buffer.byteLength(text);
    load.wire += typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    inFlight++;
    post(body, batch.length)
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => {
        inFlight--;
        wake?.();
      });
  };
  let batch: string[] = [];
  for (const row of rows) {
    batch.push(JSON.stringify(row));
    if (batch.length === o.batch) {
      send(batch);
      batch = [];
      while (inFlight >= o.inFlight) await new Promise<void>((r) => (wake = r));
    }
  }
  if (batch.length > 0) send(batch);
  while (inFlight > 0) await new Promise<void>((r) => (wake = r));
  await Promise.all(pools.map((p) => p.close()));
  if (failure !== undefined) throw failure;
  return load;
}
