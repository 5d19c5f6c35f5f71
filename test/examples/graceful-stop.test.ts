/**
 * examples/graceful-stop.ts against real local shards: Ctrl-C (SIGINT) stops the endless
 * ingestion, the summary it prints is exact (the shards received exactly the records it calls
 * written), and the process exits by itself with code 0.
 */
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main, startLocalShards } from '../../examples/graceful-stop.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('examples/graceful-stop', () => {
  it('an abort stops the ingestion: nothing read after it, every record read accounted for', async () => {
    const local = await startLocalShards(3);
    const stop = new AbortController();
    let lines = 0;
    const out = new Writable({
      write(_chunk, _encoding, callback) {
        // The first progress line: records have been written; stop now.
        if (++lines === 1) stop.abort(new Error('stop'));
        callback();
      },
    });
    try {
      const { summary, stopped } = await main({
        origins: local.origins,
        signal: stop.signal,
        out,
      });
      expect(stopped).toBe(true);
      expect(summary.written).toBeGreaterThan(0);
      expect(local.received()).toBe(summary.written);
      // At most the record read as the abort came fails, with the abort's reason.
      expect(summary.failed).toBeLessThanOrEqual(1);
      for (const { error } of summary.failures) expect(error).toBe(stop.signal.reason);
      const perShard = Object.values(summary.perShard).reduce((a, b) => a + b, 0);
      expect(perShard).toBe(summary.written);
    } finally {
      await local.close();
    }
  });

  it('run as a script, Ctrl-C (SIGINT) makes it print the summary and exit 0', async () => {
    // Node with tsx's loader, not the `tsx` command: the command passes a Ctrl-C on to the script
    // and kills it when it has not heard back within 30 ms, a race a busy machine can lose.
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/graceful-stop.ts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const closed = new Promise<void>((resolve) =>
      child.on('close', (code, signal) => {
        exited = { code, signal };
        resolve();
      }),
    );
    try {
      // Bounded: 45 s for tsx to start and the first records to be written on a busy machine.
      for (let i = 0; i < 900 && !/^[1-9]\d* written/m.test(out) && exited === undefined; i++) {
        await wait(50);
      }
      expect(out).toMatch(/^[1-9]\d* written/m);
      child.kill('SIGINT');
      await Promise.race([closed, wait(20_000)]);
      expect(exited, `still running after SIGINT; printed:\n${out.slice(-400)}`).toEqual({
        code: 0,
        signal: null,
      });
      expect(out).toContain('stopping: no new record is read');
      expect(out).toContain('stopped: no record read after the stop, every record read settled');
      const written = Number(/^written: (\d+)$/m.exec(out)?.[1]);
      expect(written).toBeGreaterThan(0);
      expect(out).toContain(`the local shards received ${written} records (written: ${written})`);
      expect(err).toBe('');
    } finally {
      if (exited === undefined) child.kill('SIGKILL');
    }
  }, 60_000);
});
