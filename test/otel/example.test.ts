/** examples/otel-prometheus.ts, run briefly and scraped once over real HTTP on 127.0.0.1. */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../examples/otel-prometheus.js';

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function scrape(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve(text));
      })
      .on('error', reject);
  });
}

/** The value of the sample `name{…labels…}` in a Prometheus text exposition. */
function sample(text: string, name: string, labels: string[] = []): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels.every((l) => line.includes(l))) total += Number(line.slice(line.lastIndexOf(' ')));
  }
  return total;
}

describe('examples/otel-prometheus', () => {
  it('serves the balancer’s metrics in Prometheus text, equal to stats()', async () => {
    const example = await main({ port: await freePort(), runs: 300 });
    try {
      const text = await scrape(example.url);
      const stats = example.balancer.stats();
      const requests = stats.shards.reduce((s, x) => s + x.requests, 0);
      expect(sample(text, 'shardwise_attempts_total')).toBe(requests);
      expect(sample(text, 'shardwise_attempts_total', ['shardwise_outcome="success"'])).toBe(
        stats.completed,
      );
      expect(sample(text, 'shardwise_retries_total')).toBe(stats.retries);
      expect(sample(text, 'shardwise_attempt_duration_count')).toBe(requests);
      expect(sample(text, 'shardwise_limit', ['shardwise_shard="a"'])).toBe(8);
      expect(text).toContain('# TYPE shardwise_in_flight gauge');
      expect(text).toContain('# TYPE shardwise_queue_size gauge');
      expect(stats.completed + example.failed).toBe(300);
    } finally {
      await example.close();
    }
  });

  it('run as the README says, it keeps serving the URL it printed until Ctrl-C, then exits', async () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [`${root}node_modules/tsx/dist/cli.mjs`, 'examples/otel-prometheus.ts'],
      { cwd: root, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    let exited: number | null | undefined;
    const closed = new Promise<void>((resolve) =>
      child.on('close', (code) => {
        exited = code;
        resolve();
      }),
    );
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      // Bounded: 45 s for tsx to start and the 2 000 runs to settle on a busy machine.
      for (let i = 0; i < 900 && !out.includes('Ctrl-C') && exited === undefined; i++)
        await wait(50);
      expect(out).toContain(`metrics at http://127.0.0.1:${port}/metrics (Ctrl-C to stop)`);
      await wait(300); // a user reads the line, then scrapes (it had exited by now, before)
      expect(exited).toBeUndefined();
      expect(await scrape(`http://127.0.0.1:${port}/metrics`)).toContain(
        'shardwise_attempts_total',
      );
      child.kill('SIGINT');
      await Promise.race([closed, wait(10_000)]);
      expect(exited).toBe(0);
    } finally {
      if (exited === undefined) child.kill('SIGKILL');
    }
  }, 60_000);
});
