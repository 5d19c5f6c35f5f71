export { fmix32, murmur3_32, murmur3_32Bytes } from './murmur3.js';
export { xxhash64, xxhash64Into } from './xxhash64.js';
