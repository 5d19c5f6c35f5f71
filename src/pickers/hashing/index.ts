export { consistentHash } from './consistent-hash.js';
export { jumpHash } from './jump.js';
export { MAGLEV_TABLE_SIZES } from './maglev.js';
export type { KeyHash } from './order.js';
export type {
  Affinity,
  ConsistentHashOptions,
  ConsistentHashPicker,
  HashAlgorithm,
  HashDescription,
  RehashEvent,
} from './types.js';
