/** examples/otel-prometheus.ts, run briefly and scraped once over real HTTP on 127.0.0.1. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
});
