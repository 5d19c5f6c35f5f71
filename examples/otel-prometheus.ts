/**
 * A balancer's metrics served to Prometheus: `instrument()` from `shardwise/otel` publishes the
 * attempts, retries, ejections, durations, in-flight counts, limits and queue size through the
 * OpenTelemetry SDK, and `@opentelemetry/exporter-prometheus` serves them on 127.0.0.1.
 *
 *   npx tsx examples/otel-prometheus.ts          # then: curl http://127.0.0.1:9464/metrics
 *   PORT=9465 npx tsx examples/otel-prometheus.ts   # another port
 *
 * The shards here are three in-process stand-ins (a is fast, b slower, c fails one call in ten),
 * so the example needs nothing else running; a real loader would `run` its uploads instead.
 */

import { pathToFileURL } from 'node:url';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { Balancer, p2c } from 'shardwise';
import { instrument } from 'shardwise/otel';

export interface OtelExampleOptions {
  /** Port of the metrics endpoint on 127.0.0.1 (default 9464, Prometheus' registered one). */
  port?: number;
  /** Runs sent through the balancer before the figures are final (default 2 000). */
  runs?: number;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Starts the exporter, sends `runs` through an instrumented balancer; resolves when they settled. */
export async function main(options: OtelExampleOptions = {}) {
  const port = options.port ?? 9464;
  const exporter = new PrometheusExporter({ host: '127.0.0.1', port, preventServerStart: true });
  await exporter.startServer();
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const balancer = new Balancer<string>({
    shards: [
      { id: 'a', target: 'fast' },
      { id: 'b', target: 'slow' },
      { id: 'c', target: 'flaky' },
    ],
    picker: p2c({ load: 'ewma' }),
    maxInFlightPerShard: 8,
    maxQueued: 100,
  });
  const detach = instrument(balancer, { meterProvider });

  let calls = 0;
  const upload = async (target: string) => {
    calls++;
    await delay(target === 'slow' ? 4 : 1);
    if (target === 'flaky' && calls % 10 === 0) throw new Error('flaky shard failed');
  };
  let failed = 0;
  for (let i = 0; i < (options.runs ?? 2_000); i++) {
    await balancer.ready();
    balancer
      .run((shard) => upload(shard.target), { idempotent: true })
      .catch(() => {
        failed++;
      });
  }
  await balancer.drain();
  return {
    url: `http://127.0.0.1:${port}/metrics`,
    balancer,
    failed,
    async close() {
      detach();
      await balancer.close();
      await meterProvider.shutdown(); // stops the exporter's server too
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const example = await main(
    process.env.PORT === undefined ? {} : { port: Number(process.env.PORT) },
  );
  console.log(`metrics at ${example.url} (Ctrl-C to stop)`);
  // The exporter's server does not keep the process alive by itself (it is unref'd): this does,
  // until Ctrl-C.
  const alive = setInterval(() => {}, 60_000);
  process.once('SIGINT', () => {
    clearInterval(alive);
    void example.close();
  });
}
