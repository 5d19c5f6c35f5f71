/**
 * The check of a batch's refused records as a `send` (or `http.ingest`'s `failures`) reports
 * them: `[{ index, error?, retryable? }]`, distinct indexes into the records of that send.
 */
import { ConfigError } from '../base/errors.js';
import type { RecordFailure } from './types.js';

/**
 * `failed`, checked as a list of a batch's refused records (`[{ index, error?, retryable? }]`
 * over `count` records); `at` names it as the caller wrote it.
 */
export function checkFailures(
  at: string,
  failed: unknown,
  count: number,
): readonly RecordFailure[] {
  if (!Array.isArray(failed)) {
    throw new ConfigError(at, 'must be an array of { index, error?, retryable? }', failed);
  }
  const seen = new Uint8Array(count);
  for (let j = 0; j < failed.length; j++) {
    const f = failed[j] as RecordFailure | undefined;
    if (typeof f !== 'object' || f === null) {
      throw new ConfigError(`${at}[${j}]`, 'must be an object { index, error?, retryable? }', f);
    }
    const index = f.index;
    if (!Number.isInteger(index) || index < 0 || index >= count) {
      throw new ConfigError(
        `${at}[${j}].index`,
        `must be an integer from 0 to ${count - 1} (a position in the batch's records)`,
        index,
      );
    }
    if (seen[index] === 1) {
      throw new ConfigError(`${at}[${j}].index`, 'must not repeat an index listed before', index);
    }
    seen[index] = 1;
    if (f.retryable !== undefined && typeof f.retryable !== 'boolean') {
      throw new ConfigError(`${at}[${j}].retryable`, 'must be a boolean', f.retryable);
    }
  }
  return failed;
}
