import { describe, expect, it } from 'vitest';
import { Balancer, ConfigError } from '../../src/index.js';
import { instrument } from '../../src/otel/index.js';

/**
 * `instrument(balancer, { meter } | { meterProvider })`: a value that is not a Meter (or a
 * provider whose getMeter() gives none) is a `ConfigError` naming the option, not a TypeError
 * from the middle of instrument().
 */
const counter = { add() {} };

describe('instrument options', () => {
  it.each([
    [
      'meter',
      'a Meter without createHistogram / observable gauges',
      { meter: { createCounter: () => counter } },
    ],
    [
      'meterProvider',
      'a MeterProvider whose getMeter() returns undefined',
      { meterProvider: { getMeter: () => undefined } },
    ],
  ])('%s: %s is a ConfigError naming the option', async (field, _name, options) => {
    const balancer = new Balancer({ shards: [{ id: 'a', target: 0 }] });
    let error: unknown;
    try {
      instrument(balancer, options as never);
    } catch (e) {
      error = e;
    }
    await balancer.close();
    // today: TypeError "meter.createHistogram is not a function" /
    // "Cannot read properties of undefined (reading 'createCounter')"
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
  });
});
