/**
 * The records the compression benchmarks send: ~100-byte log lines, like a log or metrics
 * producer's, the same on every run (a seeded source), so two runs compress the same bytes.
 */

/** A small PRNG (mulberry32): every run draws the same records. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LEVELS = ['debug', 'info', 'info', 'info', 'warn', 'error'];
const PATHS = ['/api/orders', '/api/users', '/health', '/api/cart', '/static/app.js'];

/** One log record. */
export interface LogRecord {
  ts: number;
  host: string;
  level: string;
  path: string;
  status: number;
  ms: number;
  id: number;
}

/** Record `id`, its fields drawn from `random`. */
export function logRecord(id: number, random: () => number): LogRecord {
  return {
    ts: 1_700_000_000_000 + id * 13 + Math.floor(random() * 10),
    host: `web-${Math.floor(random() * 24)}`,
    level: LEVELS[Math.floor(random() * LEVELS.length)]!,
    path: PATHS[Math.floor(random() * PATHS.length)]!,
    status: random() < 0.95 ? 200 : 503,
    ms: Math.floor(random() * 900),
    id,
  };
}
