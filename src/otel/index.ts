/**
 * shardwise/otel — a balancer's figures as OpenTelemetry metrics. `@opentelemetry/api` is an
 * optional peer dependency: only its types are imported, so nothing loads it at run time.
 */
export {
  type AttemptOutcome,
  type InstrumentedBalancer,
  type InstrumentOptions,
  instrument,
  outcomeOf,
} from './instrument.js';
