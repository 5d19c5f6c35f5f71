/** Metrics test helpers: a reader collected on demand, and sums over its data points. */
import {
  type DataPoint,
  type Histogram,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import { expect } from 'vitest';

/** A reader the test collects from on demand (the SDK's own pull path, as Prometheus uses). */
export class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

export type Point = DataPoint<number | Histogram>;

export async function collect(reader: MetricReader): Promise<Map<string, Point[]>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  return byName(resourceMetrics);
}

function byName(metrics: ResourceMetrics): Map<string, Point[]> {
  const out = new Map<string, Point[]>();
  for (const scope of metrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      out.set(metric.descriptor.name, metric.dataPoints as Point[]);
    }
  }
  return out;
}

/** Sum of a counter's points whose attributes include `match`. */
export function sum(points: Point[] | undefined, match: Record<string, string> = {}): number {
  let total = 0;
  for (const p of points ?? []) {
    if (Object.entries(match).every(([k, v]) => p.attributes[k] === v)) total += p.value as number;
  }
  return total;
}
