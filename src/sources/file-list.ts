/** The check of a list of files, as `readJsonl` takes it and a checkpoint keeps it. */
import { ConfigError } from '../base/errors.js';
import { denseArray } from '../base/validate.js';

/**
 * A dense array of non-empty strings (file paths), copied; a hole or a bad entry is a
 * `ConfigError` naming `field[i]`.
 */
export function checkFileList(field: string, value: unknown): string[] {
  const list = denseArray(field, value, 'file paths');
  for (let i = 0; i < list.length; i++) {
    if (typeof list[i] !== 'string' || list[i] === '') {
      throw new ConfigError(`${field}[${i}]`, 'must be a non-empty string (a file path)', list[i]);
    }
  }
  return [...(list as string[])];
}
