export type { LoadReportFigures } from '../load/load-report.js';
export { leastInFlight } from './least-in-flight.js';
export { type P2COptions, p2c } from './p2c.js';
export { type PeakEwmaOptions, peakEwma } from './peak-ewma.js';
export { random } from './random.js';
export { roundRobin } from './round-robin.js';
export {
  type LoadReportPicker,
  type WeightedByLoadReportOptions,
  weightedByLoadReport,
} from './weighted-by-load-report.js';
export { weightedRoundRobin } from './weighted-round-robin.js';
