export {
  type ConsistentHashOptions,
  type ConsistentHashPicker,
  consistentHash,
  type HashAlgorithm,
} from './consistent-hash.js';
export { jumpHash } from './jump.js';
export type { KeyHash } from './order.js';
