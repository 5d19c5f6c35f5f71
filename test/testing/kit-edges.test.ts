/**
 * Edges of the testing kit and the command: a reused picker instance, scenario files of the
 * wrong shape, conformance options that would check nothing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import type { Picker } from '../../src/base/types.js';
import { main } from '../../src/cli/main.js';
import { p2c, roundRobin } from '../../src/pickers/index.js';
import {
  pickerConformance,
  type SimulateOptions,
  shardViews,
  simulate,
} from '../../src/testing/index.js';

async function cli(...argv: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _e, cb) {
        append(String(chunk));
        cb();
      },
    });
  const code = await main(
    argv,
    sink(() => {}),
    sink((s) => (err += s)),
  );
  return { code, err };
}

describe('simulate() determinism with a picker instance', () => {
  it('the same options object (one roundRobin() instance) twice gives a deep-equal result', async () => {
    const options: SimulateOptions = {
      picker: roundRobin(),
      shards: [
        { id: 'a', latency: 1 },
        { id: 'b', latency: 5 },
        { id: 'c', latency: 10 },
      ],
      concurrency: 4,
      requests: 100,
      seed: 1,
    };
    const first = await simulate(options);
    const again = await simulate(options);
    expect(again.perShard.map((s) => s.requests)).toEqual(first.perShard.map((s) => s.requests));
    expect(again).toEqual(first);
  });
});

describe('the command on scenario files of the wrong shape', () => {
  const dir = mkdtempSync(join(tmpdir(), 'atk-cli-'));
  const scenarios: [string, unknown][] = [
    [
      '"pickers" that is a string',
      { shards: [{ id: 'a', latency: 1 }], requests: 10, pickers: 'p2c' },
    ],
    ['a null shard', { shards: [null], requests: 10 }],
    [
      'a null schedule change',
      { shards: [{ id: 'a', latency: 1, schedule: [null] }], requests: 10 },
    ],
  ];
  for (const [label, body] of scenarios) {
    it(`a scenario with ${label} exits with code 2 and a message`, async () => {
      const file = join(dir, `${label.replace(/\W/g, '_')}.json`);
      writeFileSync(file, JSON.stringify(body));
      const r = await cli('simulate', '--scenario', file);
      expect(r.code).toBe(2);
      // The message is wrapped to 80 columns: read it as one line.
      expect(r.err.replace(/\s+/g, ' ')).toMatch(
        /shards\[0\] must be an object|shards\[0\]\.schedule\[0\] must be an object|"pickers" must be an array/,
      );
      expect(r.err).not.toMatch(/\n\s+at /); // no stack trace
    });
  }
});

describe('pickerConformance options', () => {
  const alwaysForeign = (): Picker => ({
    name: 'always-foreign',
    pick(shards) {
      if (shards.length <= 1) return shards[0];
      return shardViews(['zz'])[0]; // never one of the offered shards
    },
  });
  it('rounds: 0 (or negative, NaN) must not report a foreign-shard picker as passing', () => {
    for (const rounds of [0, -5, Number.NaN]) {
      expect(() => pickerConformance(alwaysForeign, { rounds })).toThrow(ConfigError);
      expect(() => pickerConformance(alwaysForeign, { rounds })).toThrow(
        /`rounds` must be a positive integer/,
      );
    }
    expect(() => pickerConformance(alwaysForeign)).toThrow(/returns only offered shards/);
  });
  it('shards: NaN must not blame a correct built-in picker', () => {
    let message = '';
    try {
      pickerConformance(() => p2c(), { shards: Number.NaN });
    } catch (e) {
      message = String(e);
    }
    expect(message).not.toMatch(/picker "p2c" breaks/);
    expect(message).toMatch(/`shards` must be a positive integer/);
  });

  it('names an unknown option and refuses a seed that is not an integer', () => {
    expect(() => pickerConformance(() => p2c(), { round: 5 } as never)).toThrow(
      /pickerConformance options.round.*not a known option/,
    );
    expect(() => pickerConformance(() => p2c(), { seed: 1.5 })).toThrow(
      /`seed` must be an integer/,
    );
  });
});
