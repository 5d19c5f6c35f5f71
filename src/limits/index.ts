export { AimdLimit, type AimdOptions, aimd } from './aimd.js';
export { fixed } from './fixed.js';
export { GradientLimit, type GradientOptions, gradient } from './gradient.js';
export type { ConcurrencyLimit, LimitFactory, LimitSample } from './types.js';
